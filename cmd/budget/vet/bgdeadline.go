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
// context.TODO() inside a function that already has a context, and a fresh
// context.Background() or TODO() handed straight to a call there: the common
// bugs that throw the caller's deadline away.
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
after the caller's context has ended).

Also reported: context.Background() or context.TODO() passed directly as a
context.Context argument, as in doWork(context.Background()), by a
synchronous call in a function that itself has a context.Context or
*http.Request parameter. The suggested fix passes ctx (or r.Context())
instead. To keep false positives near zero this leaves alone: calls
started with go or defer, and any call inside a function literal that has
no context parameter of its own (a goroutine or callback that may outlive
the request), since work that outlives its caller legitimately needs a
fresh context; functions without a context (main, init, constructors);
calls after <-ctx.Done(); calls into the context package itself
(WithCancel, WithValue); cleanup calls (a function or method named Close,
Shutdown, Rollback or Release, as in conn.Close(context.Background())),
which must finish even when the caller's context has ended; and test files, which choose their contexts on
purpose. Detached work should still say so, with
context.WithoutCancel(ctx) or budget.Detach.`,
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      runBgDeadline,
}

func runBgDeadline(pass *analysis.Pass) (any, error) {
	in := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	for cur := range in.Root().Preorder((*ast.CallExpr)(nil)) {
		call := cur.Node().(*ast.CallExpr)
		fn := callee(pass.TypesInfo, call)
		if !isPkgFunc(fn, "context", deadlineFuncs...) {
			checkFreshArgs(pass, cur, call, fn)
			continue
		}
		if len(call.Args) == 0 {
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

// checkFreshArgs reports context.Background() or context.TODO() passed
// directly as a context.Context argument of call, a synchronous call in a
// function with a context or request parameter of its own.
func checkFreshArgs(pass *analysis.Pass, cur inspector.Cursor, call *ast.CallExpr, fn *types.Func) {
	if fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "context" {
		return // derivations; the deadline ones are checked above
	}
	if fn != nil && cleanupFuncs[fn.Name()] {
		return
	}
	sig, ok := types.Unalias(pass.TypesInfo.TypeOf(call.Fun)).(*types.Signature)
	if !ok || inTestFile(pass, call.Pos()) || startedAsync(cur) {
		return
	}
	var src ctxSource
	found := false
	for i, arg := range call.Args {
		if i >= sig.Params().Len() || (sig.Variadic() && i == sig.Params().Len()-1) || !isContext(sig.Params().At(i).Type()) {
			continue
		}
		fresh, ok := ast.Unparen(arg).(*ast.CallExpr)
		if !ok || !isCallTo(pass.TypesInfo, fresh, "context", "Background", "TODO") {
			continue
		}
		if !found {
			if src, found = ownCtx(pass.TypesInfo, cur); !found || waitedForDone(pass.TypesInfo, src, call.Pos()) {
				return
			}
		}
		name := types.ExprString(call.Fun)
		if fn != nil {
			name = fn.Name()
		}
		freshName := "context." + callee(pass.TypesInfo, fresh).Name() + "()"
		d := analysis.Diagnostic{
			Pos: fresh.Pos(),
			End: fresh.End(),
			Message: freshName + " passed to " + name + " although " + src.expr +
				" is in scope: the caller's deadline and cancellation are lost; pass " + src.expr +
				", or context.WithoutCancel(" + src.expr + ") for work meant to outlive the caller",
		}
		if resolvesTo(pass.Pkg, fresh.Pos(), src.param.Name(), src.param) {
			d.SuggestedFixes = []analysis.SuggestedFix{{
				Message:   "pass " + src.expr,
				TextEdits: []analysis.TextEdit{{Pos: fresh.Pos(), End: fresh.End(), NewText: []byte(src.expr)}},
			}}
		}
		pass.Report(d)
	}
}

// cleanupFuncs are the names of calls that release resources: they must
// complete even after the caller's context has ended, so a fresh context
// is the right one for them.
var cleanupFuncs = map[string]bool{"Close": true, "Shutdown": true, "Rollback": true, "Release": true}

// startedAsync reports whether the call at cur is the call of a go or defer
// statement: work that runs after, or beside, the caller's.
func startedAsync(cur inspector.Cursor) bool {
	switch p := cur.Parent().Node().(type) {
	case *ast.GoStmt:
		return p.Call == cur.Node()
	case *ast.DeferStmt:
		return p.Call == cur.Node()
	}
	return false
}

// ownCtx returns the context of the innermost function around cur, from its
// own parameters only: a function literal without one is a goroutine or a
// callback that may outlive the function around it.
func ownCtx(info *types.Info, cur inspector.Cursor) (ctxSource, bool) {
	for fc := range cur.Enclosing((*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)) {
		switch f := fc.Node().(type) {
		case *ast.FuncDecl:
			return ctxParam(info, f.Type, f.Body)
		case *ast.FuncLit:
			return ctxParam(info, f.Type, f.Body)
		}
	}
	return ctxSource{}, false
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
