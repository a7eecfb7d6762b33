package vet

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// RetryExpired reports a loop that retries when an attempt failed with
// context.DeadlineExceeded and never checks whether the caller's own
// context has expired.
var RetryExpired = &analysis.Analyzer{
	Name: "retryexpired",
	Doc: `report retry loops that retry on context.DeadlineExceeded

An if statement or switch case in a loop whose condition holds when an
error is context.DeadlineExceeded (errors.Is(err,
context.DeadlineExceeded), err == context.DeadlineExceeded) and whose
body continues the loop is reported when nothing in the loop checks the
context or a deadline (ctx.Err(), ctx.Done(), time.Until, a budget call).
Once the caller's deadline has passed every attempt fails the same way,
so the loop spins until its attempt limit. Retrying a per-attempt timeout
is fine when the loop also checks the caller's context.`,
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      runRetryExpired,
}

func runRetryExpired(pass *analysis.Pass) (any, error) {
	in := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	for cur := range in.Root().Preorder((*ast.IfStmt)(nil), (*ast.CaseClause)(nil)) {
		var conds []ast.Expr
		var body []ast.Stmt
		switch n := cur.Node().(type) {
		case *ast.IfStmt:
			conds, body = []ast.Expr{n.Cond}, n.Body.List
		case *ast.CaseClause:
			conds, body = n.List, n.Body
		}
		hit := false
		for _, c := range conds {
			hit = hit || holdsOnExpired(pass.TypesInfo, c)
		}
		if !hit || !continues(body) {
			continue
		}
		loop, ok := enclosingLoop(cur)
		if !ok || usesCtx(pass.TypesInfo, loop.Node()) {
			continue
		}
		pass.Reportf(cur.Node().Pos(), "retrying on context.DeadlineExceeded without checking the caller's context: once its deadline has passed every attempt fails the same way; check ctx.Err() before retrying")
	}
	return nil, nil
}

// holdsOnExpired reports whether cond is true when an error is
// context.DeadlineExceeded: errors.Is(err, context.DeadlineExceeded),
// err == context.DeadlineExceeded, or either joined with && or ||.
func holdsOnExpired(info *types.Info, cond ast.Expr) bool {
	switch e := ast.Unparen(cond).(type) {
	case *ast.CallExpr:
		return isCallTo(info, e, "errors", "Is") && len(e.Args) == 2 && isVar(info, e.Args[1], "context", "DeadlineExceeded")
	case *ast.BinaryExpr:
		switch e.Op {
		case token.EQL:
			return isVar(info, e.X, "context", "DeadlineExceeded") || isVar(info, e.Y, "context", "DeadlineExceeded")
		case token.LAND, token.LOR:
			return holdsOnExpired(info, e.X) || holdsOnExpired(info, e.Y)
		}
	}
	return false
}

// continues reports whether stmts continue a loop: a continue statement
// outside nested loops, switches' own breaks and function literals.
func continues(stmts []ast.Stmt) bool {
	found := false
	for _, s := range stmts {
		ast.Inspect(s, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.ForStmt, *ast.RangeStmt:
				return false
			case *ast.BranchStmt:
				if n.Tok == token.CONTINUE {
					found = true
				}
			}
			return !found
		})
	}
	return found
}
