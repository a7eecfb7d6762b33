package vet

import (
	"go/ast"
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
// poll loop: it calls something whose last result is an error and tests an
// error in an if statement. Nested function literals do not count, since
// they run on their own schedule.
func looksLikeRetry(info *types.Info, body *ast.BlockStmt) bool {
	calls, tests := false, false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if returnsError(info, n) {
				calls = true
			}
		case *ast.IfStmt:
			if mentionsError(info, n.Cond) {
				tests = true
			}
		}
		return !(calls && tests)
	})
	return calls && tests
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
