package vet

import (
	"go/ast"
	"go/token"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// RetrySleep reports a sleep or timer wait inside a retry loop that never
// looks at its context, so the retries sleep on after the deadline.
var RetrySleep = &analysis.Analyzer{
	Name: "retrysleep",
	Doc: `report sleeps in retry loops that never check the context

Inside a function with a context.Context or *http.Request parameter, a
for loop that calls something returning an error and goes round again
after a failure (continue, an if err != nil that does not leave, or an
if err == nil that does: a retry loop) and waits with time.Sleep,
<-time.After(d), <-time.Tick(d) or <-t.C of a time.Timer or time.Ticker
is reported when nothing in the loop checks the context or a deadline:
no ctx.Done(), ctx.Err(), ctx.Deadline(), context.Cause,
time.Now/Since/Until or budget call. Such a loop sleeps and retries
after the caller has given up. Wait in a select with <-ctx.Done()
instead, or check ctx.Err() each attempt. Only the innermost loop
around the wait is considered.`,
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      runRetrySleep,
}

func runRetrySleep(pass *analysis.Pass) (any, error) {
	in := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	for cur := range in.Root().Preorder((*ast.CallExpr)(nil), (*ast.UnaryExpr)(nil)) {
		what := waitKind(pass, cur.Node())
		if what == "" {
			continue
		}
		loop, ok := enclosingLoop(cur)
		if !ok {
			continue
		}
		src, ok := ctxInScope(pass.TypesInfo, loop)
		if !ok || !looksLikeRetry(pass.TypesInfo, loopBody(loop.Node())) || usesCtx(pass.TypesInfo, loop.Node()) {
			continue
		}
		pass.Reportf(cur.Node().Pos(), "%s in a retry loop that never checks %s: the loop sleeps and retries after the deadline; wait in a select with <-%s.Done() or check %s.Err() each attempt",
			what, src.expr, src.expr, src.expr)
	}
	return nil, nil
}

// waitKind names the wait n performs ("time.Sleep", "<-time.After"), or
// returns "" when n is not a wait.
func waitKind(pass *analysis.Pass, n ast.Node) string {
	switch n := n.(type) {
	case *ast.CallExpr:
		if isCallTo(pass.TypesInfo, n, "time", "Sleep") {
			return "time.Sleep"
		}
	case *ast.UnaryExpr:
		if n.Op != token.ARROW {
			return ""
		}
		switch x := ast.Unparen(n.X).(type) {
		case *ast.CallExpr:
			if isCallTo(pass.TypesInfo, x, "time", "After", "Tick") {
				return "<-time." + callee(pass.TypesInfo, x).Name()
			}
		case *ast.SelectorExpr:
			t := pass.TypesInfo.TypeOf(x.X)
			if x.Sel.Name == "C" && (isNamedOrPtr(t, "time", "Timer") || isNamedOrPtr(t, "time", "Ticker")) {
				return "a timer wait"
			}
		}
	}
	return ""
}
