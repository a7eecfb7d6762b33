package vet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// HTTPServer reports HTTP servers that let a client take forever to send its
// request headers: an http.Server built without ReadHeaderTimeout (or
// ReadTimeout, which it defaults to), and the package-level
// http.ListenAndServe, ListenAndServeTLS, Serve and ServeTLS, which build a
// server with no timeouts at all.
var HTTPServer = &analysis.Analyzer{
	Name: "httpserver",
	Doc: `report http.Servers without ReadHeaderTimeout

A server with neither ReadHeaderTimeout nor ReadTimeout waits forever for a
client's request headers, so slow or stalled clients (Slowloris) hold
connections and goroutines without bound, and no request deadline has even
started. Reported: http.Server composite literals, new(http.Server) and
var srv http.Server, unless srv.ReadHeaderTimeout or srv.ReadTimeout is
assigned later in the same function (or, for a package-level server,
anywhere in the package); and calls to http.ListenAndServe,
ListenAndServeTLS, Serve and ServeTLS. Test files are skipped.`,
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      runHTTPServer,
}

// headerFields are the fields that bound the time to read request headers.
var headerFields = []string{"ReadHeaderTimeout", "ReadTimeout"}

const serverMsg = "http.Server without ReadHeaderTimeout: a client that sends its headers slowly holds a connection forever; set ReadHeaderTimeout"

func runHTTPServer(pass *analysis.Pass) (any, error) {
	in := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	filter := []ast.Node{(*ast.CompositeLit)(nil), (*ast.CallExpr)(nil), (*ast.ValueSpec)(nil)}
	for cur := range in.Root().Preorder(filter...) {
		if inTestFile(pass, cur.Node().Pos()) {
			continue
		}
		switch n := cur.Node().(type) {
		case *ast.CompositeLit:
			if isNamed(pass.TypesInfo.TypeOf(n), "net/http", "Server") && !hasKey(n, headerFields...) && !fieldSetLater(pass, cur, headerFields...) {
				pass.Reportf(n.Pos(), serverMsg)
			}
		case *ast.CallExpr:
			fn := callee(pass.TypesInfo, n)
			if isPkgFunc(fn, "net/http", "ListenAndServe", "ListenAndServeTLS", "Serve", "ServeTLS") {
				pass.Reportf(n.Pos(), "http.%s builds a server with no timeouts: a client that sends its headers slowly holds a connection forever; use an http.Server with ReadHeaderTimeout", fn.Name())
				continue
			}
			if isNewServer(pass, n) && !fieldSetLater(pass, cur, headerFields...) {
				pass.Reportf(n.Pos(), serverMsg)
			}
		case *ast.ValueSpec:
			if len(n.Values) > 0 || n.Type == nil || !isNamed(pass.TypesInfo.TypeOf(n.Type), "net/http", "Server") {
				continue
			}
			for _, name := range n.Names {
				if name.Name != "_" && !varFieldSet(pass, cur, name, headerFields...) {
					pass.Reportf(name.Pos(), serverMsg)
				}
			}
		}
	}
	return nil, nil
}

// isNewServer reports whether call is new(http.Server).
func isNewServer(pass *analysis.Pass, call *ast.CallExpr) bool {
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	if !ok || id.Name != "new" || len(call.Args) != 1 {
		return false
	}
	if _, builtin := pass.TypesInfo.Uses[id].(*types.Builtin); !builtin {
		return false
	}
	return isNamed(pass.TypesInfo.TypeOf(call.Args[0]), "net/http", "Server")
}

// varFieldSet reports whether one of fields of the variable declared by name
// (var srv http.Server) is assigned after its declaration.
func varFieldSet(pass *analysis.Pass, cur inspector.Cursor, name *ast.Ident, fields ...string) bool {
	obj := pass.TypesInfo.Defs[name]
	return obj != nil && assignsField(pass, cur, holder{obj: obj}, name.End(), fields)
}
