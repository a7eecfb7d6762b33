package vet

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/ast/inspector"
)

// enclosingLoop returns the innermost for or range statement around cur in
// the same function, or false when cur is not inside a loop.
func enclosingLoop(cur inspector.Cursor) (inspector.Cursor, bool) {
	for c := range cur.Enclosing((*ast.ForStmt)(nil), (*ast.RangeStmt)(nil), (*ast.FuncLit)(nil), (*ast.FuncDecl)(nil)) {
		switch c.Node().(type) {
		case *ast.ForStmt, *ast.RangeStmt:
			if c != cur {
				return c, true
			}
		default:
			return inspector.Cursor{}, false
		}
	}
	return inspector.Cursor{}, false
}

// loopBody returns the body of a for or range statement.
func loopBody(n ast.Node) *ast.BlockStmt {
	switch n := n.(type) {
	case *ast.ForStmt:
		return n.Body
	case *ast.RangeStmt:
		return n.Body
	}
	return nil
}

// looksLikeRetry reports whether a loop body has the shape of a retry or
// poll loop: it calls something whose last result is an error, and an if
// statement on an error lets the loop go round again after a failure, by
// continuing, by falling through, or by leaving only on success (if err ==
// nil { return }). A loop that leaves on every error (if err != nil {
// return err }) polls for a state, not a retry, and the failing call ends
// it once the context is done. Nested function literals do not count,
// since they run on their own schedule.
func looksLikeRetry(info *types.Info, body *ast.BlockStmt) bool {
	calls, retries := false, false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if returnsError(info, n) {
				calls = true
			}
		case *ast.IfStmt:
			if !mentionsError(info, n.Cond) {
				break
			}
			exits := leaves(n.Body)
			if successTest(info, n.Cond) == exits || continues(n.Body.List) {
				retries = true
			}
		}
		return !(calls && retries)
	})
	return calls && retries
}

// successTest reports whether cond holds when a call went well: err == nil,
// or the negation of a failure test (!errors.Is(err, errRetry)), possibly
// joined with && to other conditions.
func successTest(info *types.Info, cond ast.Expr) bool {
	if u, ok := ast.Unparen(cond).(*ast.UnaryExpr); ok && u.Op == token.NOT {
		return !successTest(info, u.X)
	}
	e, ok := ast.Unparen(cond).(*ast.BinaryExpr)
	if !ok {
		return false
	}
	switch e.Op {
	case token.LAND:
		return successTest(info, e.X) || successTest(info, e.Y)
	case token.EQL:
		return (isError(info.TypeOf(e.X)) && isNil(info, e.Y)) || (isError(info.TypeOf(e.Y)) && isNil(info, e.X))
	}
	return false
}

// isNil reports whether e is the predeclared nil.
func isNil(info *types.Info, e ast.Expr) bool {
	tv, ok := info.Types[e]
	return ok && tv.IsNil()
}

// leaves reports whether a block ends by leaving the loop or the function:
// its last statement is a return, a break, a goto or a panic.
func leaves(b *ast.BlockStmt) bool {
	if len(b.List) == 0 {
		return false
	}
	switch s := b.List[len(b.List)-1].(type) {
	case *ast.ReturnStmt:
		return true
	case *ast.BranchStmt:
		return s.Tok == token.BREAK || s.Tok == token.GOTO
	case *ast.ExprStmt:
		if call, ok := s.X.(*ast.CallExpr); ok {
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "panic" {
				return true
			}
		}
	}
	return false
}

// returnsError reports whether call's last result is an error.
func returnsError(info *types.Info, call *ast.CallExpr) bool {
	switch t := info.TypeOf(call).(type) {
	case *types.Tuple:
		return t.Len() > 0 && isError(t.At(t.Len()-1).Type())
	default:
		return isError(t)
	}
}

// mentionsError reports whether e contains an expression of type error.
func mentionsError(info *types.Info, e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if x, ok := n.(ast.Expr); ok && !found && isError(info.TypeOf(x)) {
			found = true
		}
		return !found
	})
	return found
}
