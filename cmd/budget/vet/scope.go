package vet

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/ast/inspector"
)

// ctxSource is a context that code at some position could have used instead
// of a fresh one: a context.Context parameter or an *http.Request parameter
// of an enclosing function.
type ctxSource struct {
	param *types.Var // the parameter
	expr  string     // how to spell the context there: "ctx" or "r.Context()"
	body  *ast.BlockStmt
}

// ctxInScope returns the nearest context the code at cur could use: the
// context.Context parameters of the innermost enclosing function first, then
// its *http.Request parameters, then those of the functions around it.
// Blank and unnamed parameters do not count: a function that names its
// context _ has chosen not to use it.
func ctxInScope(info *types.Info, cur inspector.Cursor) (ctxSource, bool) {
	for fc := range cur.Enclosing((*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)) {
		var ft *ast.FuncType
		var body *ast.BlockStmt
		switch f := fc.Node().(type) {
		case *ast.FuncDecl:
			ft, body = f.Type, f.Body
		case *ast.FuncLit:
			ft, body = f.Type, f.Body
		}
		if src, ok := ctxParam(info, ft, body); ok {
			return src, true
		}
	}
	return ctxSource{}, false
}

// ctxParam returns the first usable context.Context parameter of ft, or else
// its first usable *http.Request parameter.
func ctxParam(info *types.Info, ft *ast.FuncType, body *ast.BlockStmt) (ctxSource, bool) {
	if ft == nil || ft.Params == nil {
		return ctxSource{}, false
	}
	var req ctxSource
	for _, field := range ft.Params.List {
		t := info.TypeOf(field.Type)
		for _, name := range field.Names {
			if name.Name == "_" {
				continue
			}
			v, ok := info.Defs[name].(*types.Var)
			if !ok {
				continue
			}
			switch {
			case isContext(t):
				return ctxSource{param: v, expr: name.Name, body: body}, true
			case req.param == nil && isRequestPtr(t):
				req = ctxSource{param: v, expr: name.Name + ".Context()", body: body}
			}
		}
	}
	return req, req.param != nil
}

// isRequestPtr reports whether t is *net/http.Request.
func isRequestPtr(t types.Type) bool {
	p, ok := types.Unalias(t).(*types.Pointer)
	return ok && isNamed(p.Elem(), "net/http", "Request")
}

// resolvesTo reports whether name, written at pos, would refer to obj: the
// condition for a suggested fix that spells obj by name.
func resolvesTo(pkg *types.Package, pos token.Pos, name string, obj types.Object) bool {
	scope := pkg.Scope().Innermost(pos)
	if scope == nil {
		return false
	}
	_, found := scope.LookupParent(name, pos)
	return found == obj
}

// enclosingBody returns the body of the innermost function around cur, or
// nil at package level.
func enclosingBody(cur inspector.Cursor) *ast.BlockStmt {
	for fc := range cur.Enclosing((*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)) {
		switch f := fc.Node().(type) {
		case *ast.FuncDecl:
			return f.Body
		case *ast.FuncLit:
			return f.Body
		}
	}
	return nil
}

// deadlineInReach reports whether the code at cur can see a deadline: an
// enclosing function has a context or request parameter, or the innermost
// function derives a deadline or builds a request with a context itself.
func deadlineInReach(info *types.Info, cur inspector.Cursor) bool {
	if _, ok := ctxInScope(info, cur); ok {
		return true
	}
	body := enclosingBody(cur)
	if body == nil {
		return false
	}
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && !found {
			found = isBoundingCall(info, call) || carriesContext(info, call)
		}
		return !found
	})
	return found
}

// carriesContext reports whether call builds an HTTP request that carries a
// context: http.NewRequestWithContext, or Request.WithContext or Clone.
func carriesContext(info *types.Info, call *ast.CallExpr) bool {
	fn := callee(info, call)
	if isPkgFunc(fn, "net/http", "NewRequestWithContext") {
		return true
	}
	if fn == nil || (fn.Name() != "WithContext" && fn.Name() != "Clone") {
		return false
	}
	sig, ok := fn.Type().(*types.Signature)
	return ok && sig.Recv() != nil && isNamedOrPtr(sig.Recv().Type(), "net/http", "Request")
}

// usesCtx reports whether n, nested function literals included, checks a
// context or a deadline: it calls Done, Err or Deadline on a context,
// context.Cause, time.Now, time.Since or time.Until, or any budget function.
func usesCtx(info *types.Info, n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if found {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		fn := callee(info, call)
		switch {
		case isPkgFunc(fn, "context", "Cause"), isPkgFunc(fn, "time", "Now", "Since", "Until"), inBudget(fn):
			found = true
		case fn != nil:
			if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && isContext(info.TypeOf(sel.X)) {
				switch fn.Name() {
				case "Done", "Err", "Deadline":
					found = true
				}
			}
		}
		return !found
	})
	return found
}
