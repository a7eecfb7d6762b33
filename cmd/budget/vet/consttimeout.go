package vet

import (
	"go/ast"
	"go/constant"
	"go/types"
	"strings"
	"time"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// ConstTimeout reports a constant timeout handed to a dependency inside a
// function that has a context: the deadline governs the caller while the
// dependency runs on its own clock.
var ConstTimeout = &analysis.Analyzer{
	Name: "consttimeout",
	Doc: `report constant timeouts given to a dependency where a context is at hand

Inside a function with a context.Context or *http.Request parameter,
reported are: a constant, positive time.Duration passed as a parameter
named timeout (any case) of a function that takes no context itself; and
a constant Timeout set on an http.Client or net.Dialer built in that
function (in the composite literal or assigned later). A fixed timeout
outlives the request's deadline when less time is left, so the call runs
for a caller that has gone. Derive the time from the context instead
(send the request with http.NewRequestWithContext, dial with DialContext,
or pass the time left). Not reported: the context package and the budget
module, whose timeouts are clamped to the context's deadline; callees that
take a context, which can clamp the same way; a net.Dialer whose
DialContext is called in the function; test files.`,
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      runConstTimeout,
}

func runConstTimeout(pass *analysis.Pass) (any, error) {
	in := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	filter := []ast.Node{(*ast.CallExpr)(nil), (*ast.CompositeLit)(nil), (*ast.AssignStmt)(nil)}
	for cur := range in.Root().Preorder(filter...) {
		if inTestFile(pass, cur.Node().Pos()) {
			continue // tests wait for their own fixtures with fixed limits
		}
		src, ok := ctxInScope(pass.TypesInfo, cur)
		if !ok {
			continue
		}
		switch n := cur.Node().(type) {
		case *ast.CallExpr:
			checkTimeoutArgs(pass, n, src)
		case *ast.CompositeLit:
			kind := timeoutHolder(pass.TypesInfo.TypeOf(n))
			if kind == "" || (kind == "net.Dialer" && dialsWithContext(pass.TypesInfo, enclosingBody(cur))) {
				continue
			}
			for _, e := range n.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Timeout") {
					reportConst(pass, kv.Value, kind+" Timeout", src)
				}
			}
		case *ast.AssignStmt:
			if len(n.Lhs) != len(n.Rhs) {
				continue
			}
			for i, l := range n.Lhs {
				sel, ok := ast.Unparen(l).(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Timeout" || !builtIn(pass.TypesInfo, sel.X, enclosingBody(cur)) {
					continue
				}
				kind := timeoutHolder(pass.TypesInfo.TypeOf(sel.X))
				if kind == "" || (kind == "net.Dialer" && dialsWithContext(pass.TypesInfo, enclosingBody(cur))) {
					continue
				}
				reportConst(pass, n.Rhs[i], kind+" Timeout", src)
			}
		}
	}
	return nil, nil
}

// checkTimeoutArgs reports constant durations passed as a parameter named
// timeout of a callee that takes no context.
func checkTimeoutArgs(pass *analysis.Pass, call *ast.CallExpr, src ctxSource) {
	sig, ok := types.Unalias(pass.TypesInfo.TypeOf(call.Fun)).(*types.Signature)
	if !ok {
		return
	}
	fn := callee(pass.TypesInfo, call)
	if fn != nil && (fn.Pkg() == nil || fn.Pkg().Path() == "context" || inBudget(fn)) {
		return
	}
	params := sig.Params()
	for i := range params.Len() {
		if isContext(params.At(i).Type()) {
			return
		}
	}
	for i := range min(params.Len(), len(call.Args)) {
		if sig.Variadic() && i == params.Len()-1 {
			break
		}
		if strings.EqualFold(params.At(i).Name(), "timeout") {
			name := "a parameter named " + params.At(i).Name()
			if fn != nil {
				name = "the " + params.At(i).Name() + " of " + fn.Name()
			}
			reportConst(pass, call.Args[i], name, src)
		}
	}
}

// reportConst reports e when it is a constant, positive time.Duration.
func reportConst(pass *analysis.Pass, e ast.Expr, what string, src ctxSource) {
	tv, ok := pass.TypesInfo.Types[e]
	if !ok || tv.Value == nil || !isNamed(tv.Type, "time", "Duration") {
		return
	}
	n, exact := constant.Int64Val(constant.ToInt(tv.Value))
	if !exact || n <= 0 {
		return
	}
	pass.Reportf(e.Pos(), "constant %s for %s although %s is in scope: the dependency keeps its own clock when less time is left; derive the time from %s",
		time.Duration(n), what, src.expr, src.expr)
}

// timeoutHolder names the types whose Timeout field is checked, or "".
func timeoutHolder(t types.Type) string {
	switch {
	case t == nil:
		return ""
	case isNamedOrPtr(t, "net/http", "Client"):
		return "http.Client"
	case isNamedOrPtr(t, "net", "Dialer"):
		return "net.Dialer"
	}
	return ""
}

// builtIn reports whether e is a local variable declared in body: a client
// or dialer built in this function, not one handed in or shared.
func builtIn(info *types.Info, e ast.Expr, body *ast.BlockStmt) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok || body == nil {
		return false
	}
	obj := info.Uses[id]
	return obj != nil && obj.Pos() >= body.Pos() && obj.Pos() < body.End()
}

// dialsWithContext reports whether body calls a DialContext method of a
// net.Dialer, which honours the context's deadline as well as Timeout.
func dialsWithContext(info *types.Info, body *ast.BlockStmt) bool {
	if body == nil {
		return false
	}
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && !found && sel.Sel.Name == "DialContext" && isNamedOrPtr(info.TypeOf(sel.X), "net", "Dialer") {
			found = true
		}
		return !found
	})
	return found
}

// isIdent reports whether e is the identifier name.
func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
