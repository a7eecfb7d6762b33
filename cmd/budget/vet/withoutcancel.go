package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// WithoutCancel reports a context.WithoutCancel result that is never given
// a bound of its own, so the detached work can run forever.
var WithoutCancel = &analysis.Analyzer{
	Name: "withoutcancel",
	Doc: `report context.WithoutCancel results that are never bounded again

context.WithoutCancel(ctx) drops ctx's deadline and cancellation: right
for work that must outlive the request (an audit write, a cache fill),
wrong if nothing bounds it again. The result must reach
context.WithTimeout, WithDeadline (or their Cause variants), a budget
function such as budget.Detach, or context.WithCancel (whose cancel
function makes the lifetime explicit) in the same function, directly,
through the variable it is assigned to, or through context.WithValue
wrappers; otherwise the call is reported. A variable that elsewhere holds
context.Background() or another plain context variable (rctx :=
context.Background(); if req.ctx != nil { rctx =
context.WithoutCancel(req.ctx) }) is not reported: the code treats the
result as a stand-in for Background that keeps the request's values, and
bounds the work some other way.`,
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      runWithoutCancel,
}

func runWithoutCancel(pass *analysis.Pass) (any, error) {
	in := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	for cur := range in.Root().Preorder((*ast.CallExpr)(nil)) {
		call := cur.Node().(*ast.CallExpr)
		if !isCallTo(pass.TypesInfo, call, "context", "WithoutCancel") || boundedLater(pass.TypesInfo, cur) {
			continue
		}
		pass.Reportf(call.Pos(), "context.WithoutCancel result is never given a deadline of its own: the detached work can run forever; bound it with context.WithTimeout or budget.Detach")
	}
	return nil, nil
}

// boundedLater reports whether the WithoutCancel call at cur is the parent
// of a bounding call, directly or through the variable it is stored in.
func boundedLater(info *types.Info, cur inspector.Cursor) bool {
	c := cur
	for {
		p := c.Parent()
		switch n := p.Node().(type) {
		case *ast.ParenExpr:
			c = p
			continue
		case *ast.CallExpr:
			if len(n.Args) == 0 || n.Args[0] != c.Node() {
				return false
			}
			if isCallTo(info, n, "context", "WithValue") {
				c = p // a value on top keeps it unbounded: follow the wrapper
				continue
			}
			return bounds(info, n)
		case *ast.AssignStmt, *ast.ValueSpec:
			h, ok := holderOf(info, c)
			if !ok || h.obj == nil {
				return false
			}
			body := enclosingBody(cur)
			return boundsVar(info, body, h.obj) || fallbackSlot(info, body, h.obj)
		}
		return false
	}
}

// bounds reports whether call gives its first argument a deadline, or a
// cancel function that puts its lifetime in the caller's hands
// (context.WithCancel, WithCancelCause).
func bounds(info *types.Info, call *ast.CallExpr) bool {
	return isBoundingCall(info, call) || isCallTo(info, call, "context", "WithCancel", "WithCancelCause")
}

// boundsVar reports whether body passes v as the parent of a bounding call.
func boundsVar(info *types.Info, body *ast.BlockStmt, v types.Object) bool {
	if body == nil {
		return false
	}
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if found || !ok {
			return !found
		}
		if len(call.Args) > 0 && bounds(info, call) {
			if id, ok := ast.Unparen(call.Args[0]).(*ast.Ident); ok && info.Uses[id] == v {
				found = true
			}
		}
		return !found
	})
	return found
}

// fallbackSlot reports whether body also assigns v a context that is not a
// derivation: context.Background(), context.TODO(), or a plain variable or
// field. WithoutCancel then stands in for that context, keeping values.
func fallbackSlot(info *types.Info, body *ast.BlockStmt, v types.Object) bool {
	if body == nil {
		return false
	}
	plain := func(e ast.Expr) bool {
		switch e := ast.Unparen(e).(type) {
		case *ast.Ident, *ast.SelectorExpr:
			return isContext(info.TypeOf(e))
		case *ast.CallExpr:
			return isCallTo(info, e, "context", "Background", "TODO")
		}
		return false
	}
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if found || !ok || len(as.Lhs) != len(as.Rhs) {
			return !found
		}
		for i, l := range as.Lhs {
			if id, ok := ast.Unparen(l).(*ast.Ident); ok && info.ObjectOf(id) == v && plain(as.Rhs[i]) {
				found = true
			}
		}
		return !found
	})
	return found
}
