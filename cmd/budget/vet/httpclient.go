package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// HTTPClient reports HTTP calls that can wait forever: an http.Client with
// no Timeout where no deadline is in reach, and calls through
// http.DefaultClient or the package-level helpers http.Get, Post, Head and
// PostForm.
var HTTPClient = &analysis.Analyzer{
	Name: "httpclient",
	Doc: `report HTTP client calls that have no timeout and no deadline

http.Get, http.Post, http.Head and http.PostForm, and the same methods of
http.DefaultClient, use a client with no Timeout and take no context: a
slow server holds the caller forever. http.DefaultClient.Do is reported
where no deadline is in reach (no context or request parameter, no
context.WithTimeout or NewRequestWithContext in the function). An
http.Client literal without Timeout is reported where no deadline is in
reach, unless its Timeout is assigned later in the same function. Whether
a deadline is in reach is decided where the client is used: a client kept
in a local variable that only has its methods called (c.Get, c.Do) is
reported unless its own function has a context or request parameter,
derives a deadline, or builds a request with a context
(http.NewRequestWithContext, Request.WithContext or Clone); a package
carrying contexts elsewhere does not help it. Even with a context at hand,
such a client is reported when its Get, Head, Post or PostForm is called,
since those take no context. A client that leaves its function (returned,
stored in a field or a package variable, passed on) or is built at
package level is reported only if no function of the package builds a
request with a context. Test files are skipped.`,
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      runHTTPClient,
}

func runHTTPClient(pass *analysis.Pass) (any, error) {
	in := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	pkgCarries := false
	for cur := range in.Root().Preorder((*ast.CallExpr)(nil)) {
		if carriesContext(pass.TypesInfo, cur.Node().(*ast.CallExpr)) {
			pkgCarries = true
			break
		}
	}
	for cur := range in.Root().Preorder((*ast.CallExpr)(nil), (*ast.CompositeLit)(nil)) {
		if inTestFile(pass, cur.Node().Pos()) {
			continue
		}
		switch n := cur.Node().(type) {
		case *ast.CallExpr:
			checkClientCall(pass, cur, n)
		case *ast.CompositeLit:
			if !isNamed(pass.TypesInfo.TypeOf(n), "net/http", "Client") || hasKey(n, "Timeout") {
				continue
			}
			if fieldSetLater(pass, cur, "Timeout") {
				continue
			}
			if local, ctxless := localClient(pass.TypesInfo, cur); local {
				if !ctxless && deadlineInReach(pass.TypesInfo, cur) {
					continue
				}
			} else if pkgCarries || deadlineInReach(pass.TypesInfo, cur) {
				continue
			}
			pass.Reportf(n.Pos(), "http.Client without Timeout and no context deadline in reach: a slow server holds every call forever; set Timeout or send requests with http.NewRequestWithContext")
		}
	}
	return nil, nil
}

// checkClientCall reports calls through the package-level helpers and
// http.DefaultClient.
func checkClientCall(pass *analysis.Pass, cur inspector.Cursor, call *ast.CallExpr) {
	fn := callee(pass.TypesInfo, call)
	if isPkgFunc(fn, "net/http", "Get", "Post", "Head", "PostForm") {
		pass.Reportf(call.Pos(), "http.%s uses http.DefaultClient, which has no timeout, and takes no context: build the request with http.NewRequestWithContext and send it with a client that has a Timeout", fn.Name())
		return
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || fn == nil || !isVar(pass.TypesInfo, sel.X, "net/http", "DefaultClient") {
		return
	}
	switch fn.Name() {
	case "Get", "Post", "Head", "PostForm":
		pass.Reportf(call.Pos(), "http.DefaultClient.%s has no timeout and takes no context: build the request with http.NewRequestWithContext and send it with a client that has a Timeout", fn.Name())
	case "Do":
		if !deadlineInReach(pass.TypesInfo, cur) {
			pass.Reportf(call.Pos(), "http.DefaultClient.Do has no timeout and no context deadline is in reach: give the request a context with a deadline or use a client with a Timeout")
		}
	}
}

// localClient reports whether the client literal at cur is kept in a local
// variable of its function that never leaves it: every use of the variable
// selects a field or calls a method. ctxless reports whether one of those
// calls is Get, Head, Post or PostForm, which take no context, so no
// context in scope bounds them.
func localClient(info *types.Info, cur inspector.Cursor) (local, ctxless bool) {
	h, ok := holderOf(info, cur)
	body := enclosingBody(cur)
	if !ok || h.obj == nil || body == nil || h.obj.Pos() < body.Pos() || h.obj.Pos() >= body.End() {
		return false, false
	}
	local = true
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := ast.Unparen(n.X).(*ast.Ident); ok && info.Uses[id] == h.obj {
				switch n.Sel.Name {
				case "Get", "Head", "Post", "PostForm":
					ctxless = true
				}
				return false // the variable's use ends here
			}
		case *ast.Ident:
			if info.Uses[n] == h.obj {
				local = false // returned, stored, passed on or copied
			}
		}
		return local
	})
	return local, ctxless && local
}
