package vet

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/ast/inspector"
)

// holder is where a freshly built value is kept: a variable, or a field path
// such as s.srv.
type holder struct {
	obj  types.Object // the variable, when the value went into one
	path string       // the expression otherwise, as types.ExprString spells it
}

// holderOf returns what the value built at cur (a composite literal, possibly
// under &, or a call to new) is assigned to or declared as.
func holderOf(info *types.Info, cur inspector.Cursor) (holder, bool) {
	c := cur
	for {
		p := c.Parent()
		switch n := p.Node().(type) {
		case *ast.ParenExpr:
			c = p
			continue
		case *ast.UnaryExpr:
			if n.Op == token.AND {
				c = p
				continue
			}
		case *ast.AssignStmt:
			if len(n.Lhs) != len(n.Rhs) {
				return holder{}, false
			}
			for i, r := range n.Rhs {
				if r == c.Node() {
					return holderOfExpr(info, n.Lhs[i])
				}
			}
		case *ast.ValueSpec:
			for i, v := range n.Values {
				if v == c.Node() && i < len(n.Names) {
					return holderOfExpr(info, n.Names[i])
				}
			}
		}
		return holder{}, false
	}
}

// holderOfExpr returns the holder an assignment's left-hand side names.
func holderOfExpr(info *types.Info, e ast.Expr) (holder, bool) {
	e = ast.Unparen(e)
	if id, ok := e.(*ast.Ident); ok {
		if id.Name == "_" {
			return holder{}, false
		}
		if obj := info.ObjectOf(id); obj != nil {
			return holder{obj: obj}, true
		}
		return holder{}, false
	}
	if _, ok := e.(*ast.SelectorExpr); ok {
		return holder{path: types.ExprString(e)}, true
	}
	return holder{}, false
}

// is reports whether e names h.
func (h holder) is(info *types.Info, e ast.Expr) bool {
	e = ast.Unparen(e)
	if h.obj != nil {
		id, ok := e.(*ast.Ident)
		return ok && info.ObjectOf(id) == h.obj
	}
	return types.ExprString(e) == h.path
}

// fieldSetLater reports whether one of fields of the value built at cur is
// assigned after it in the same function (or, for a value built at package
// level, anywhere in the package): srv.ReadHeaderTimeout = d after
// srv := &http.Server{}.
func fieldSetLater(pass *analysis.Pass, cur inspector.Cursor, fields ...string) bool {
	h, ok := holderOf(pass.TypesInfo, cur)
	if !ok {
		return false
	}
	return assignsField(pass, cur, h, cur.Node().End(), fields)
}

// assignsField reports whether one of fields of h is assigned after pos in
// the function around cur, or anywhere in the package when cur is at package
// level.
func assignsField(pass *analysis.Pass, cur inspector.Cursor, h holder, pos token.Pos, fields []string) bool {
	var scopes []ast.Node
	body := enclosingBody(cur)
	if body != nil {
		scopes = []ast.Node{body}
	} else {
		for _, f := range pass.Files {
			scopes = append(scopes, f)
		}
	}
	found := false
	for _, scope := range scopes {
		ast.Inspect(scope, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if found || !ok || (body != nil && as.Pos() < pos) {
				return !found
			}
			for _, l := range as.Lhs {
				sel, ok := ast.Unparen(l).(*ast.SelectorExpr)
				if ok && h.is(pass.TypesInfo, sel.X) && slices.Contains(fields, sel.Sel.Name) {
					found = true
				}
			}
			return !found
		})
	}
	return found
}

// hasKey reports whether a keyed composite literal sets one of fields. An
// unkeyed literal lists every field, so it counts as setting them all.
func hasKey(lit *ast.CompositeLit, fields ...string) bool {
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		if id, ok := kv.Key.(*ast.Ident); ok {
			for _, f := range fields {
				if id.Name == f {
					return true
				}
			}
		}
	}
	return false
}
