package vet

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// BgDeadline reports a deadline derived from context.Background() or
// context.TODO() inside a function that already has a context, the common
// bug that throws the caller's deadline away.
var BgDeadline = &analysis.Analyzer{
	Name: "bgdeadline",
	Doc: `report deadlines derived from context.Background() where a context is in scope

A call to context.WithTimeout, WithDeadline, WithTimeoutCause or
WithDeadlineCause whose parent is context.Background() or context.TODO(),
inside a function with a context.Context or *http.Request parameter, starts
a fresh clock: the caller's deadline and cancellation are lost, and the
work runs on after the caller has gone. The suggested fix derives the
deadline from the parameter (ctx, or r.Context()). Work meant to outlive
the caller should say so with context.WithoutCancel(ctx) or budget.Detach.
A function that has already waited for <-ctx.Done() (a shutdown path) is
not reported, nor is a deferred function literal (cleanup that must run
after the caller's context has ended).`,
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      runBgDeadline,
}

func runBgDeadline(pass *analysis.Pass) (any, error) {
	in := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	for cur := range in.Root().Preorder((*ast.CallExpr)(nil)) {
		call := cur.Node().(*ast.CallExpr)
		fn := callee(pass.TypesInfo, call)
		if !isPkgFunc(fn, "context", deadlineFuncs...) || len(call.Args) == 0 {
			continue
		}
		parent, ok := ast.Unparen(call.Args[0]).(*ast.CallExpr)
		if !ok || !isCallTo(pass.TypesInfo, parent, "context", "Background", "TODO") {
			continue
		}
		src, ok := ctxInScope(pass.TypesInfo, cur)
		if !ok || waitedForDone(pass.TypesInfo, src, call.Pos()) || inDeferred(cur) {
			continue
		}
		fresh := "context." + callee(pass.TypesInfo, parent).Name() + "()"
		d := analysis.Diagnostic{
			Pos: call.Pos(),
			End: call.End(),
			Message: "context." + fn.Name() + " derived from " + fresh + " although " + src.expr +
				" is in scope: the caller's deadline and cancellation are lost; derive it from " + src.expr,
		}
		if resolvesTo(pass.Pkg, parent.Pos(), src.param.Name(), src.param) {
			d.SuggestedFixes = []analysis.SuggestedFix{{
				Message:   "derive the deadline from " + src.expr,
				TextEdits: []analysis.TextEdit{{Pos: parent.Pos(), End: parent.End(), NewText: []byte(src.expr)}},
			}}
		}
		pass.Report(d)
	}
	return nil, nil
}

// waitedForDone reports whether the function owning src receives from
// src's Done channel before pos: after that, the caller's context is known to
// be over, and a fresh one (for a graceful shutdown, say) is deliberate.
func waitedForDone(info *types.Info, src ctxSource, pos token.Pos) bool {
	if src.body == nil {
		return false
	}
	found := false
	ast.Inspect(src.body, func(n ast.Node) bool {
		if found || n == nil || n.Pos() >= pos {
			return false
		}
		u, ok := n.(*ast.UnaryExpr)
		if !ok || u.Op != token.ARROW {
			return true
		}
		call, ok := ast.Unparen(u.X).(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Done" {
			return true
		}
		found = refersTo(info, sel.X, src.param)
		return !found
	})
	return found
}

// refersTo reports whether e is v itself, or v.Context() for a request.
func refersTo(info *types.Info, e ast.Expr, v *types.Var) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return info.Uses[e] == v
	case *ast.CallExpr:
		if sel, ok := ast.Unparen(e.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Context" {
			return refersTo(info, sel.X, v)
		}
	}
	return false
}

// inDeferred reports whether cur lies in a function literal called by a
// defer statement: cleanup that runs when the work is over, often because
// the caller's context ended, and so needs a context of its own.
func inDeferred(cur inspector.Cursor) bool {
	for c := range cur.Enclosing((*ast.FuncLit)(nil)) {
		call, ok := c.Parent().Node().(*ast.CallExpr)
		if !ok || call.Fun != c.Node() {
			continue
		}
		if _, ok := c.Parent().Parent().Node().(*ast.DeferStmt); ok {
			return true
		}
	}
	return false
}
