package vet

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// budgetPath is the import path of the budget library. Calls into it are
// deadline-aware by construction, so the checks treat them as bounding.
const budgetPath = "github.com/timebudget/budget"

// isNamed reports whether t (or the type it aliases) is the named type
// pkg.name.
func isNamed(t types.Type, pkg, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	if !ok {
		return false
	}
	obj := n.Obj()
	return obj.Pkg() != nil && obj.Pkg().Path() == pkg && obj.Name() == name
}

// isNamedOrPtr reports whether t is pkg.name or a pointer to it.
func isNamedOrPtr(t types.Type, pkg, name string) bool {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	return isNamed(t, pkg, name)
}

// isContext reports whether t is context.Context.
func isContext(t types.Type) bool { return t != nil && isNamed(t, "context", "Context") }

// isError reports whether t is the predeclared error type.
func isError(t types.Type) bool {
	return t != nil && types.Identical(t, types.Universe.Lookup("error").Type())
}

// callee returns the function or method a call statically refers to, or nil.
func callee(info *types.Info, call *ast.CallExpr) *types.Func {
	fn, _ := typeutil.Callee(info, call).(*types.Func)
	return fn
}

// isPkgFunc reports whether fn is a package-level function of pkg named one
// of names.
func isPkgFunc(fn *types.Func, pkg string, names ...string) bool {
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != pkg {
		return false
	}
	if sig, ok := fn.Type().(*types.Signature); !ok || sig.Recv() != nil {
		return false
	}
	for _, n := range names {
		if fn.Name() == n {
			return true
		}
	}
	return false
}

// isCallTo reports whether call calls the package-level function pkg.name for
// one of names.
func isCallTo(info *types.Info, call *ast.CallExpr, pkg string, names ...string) bool {
	return isPkgFunc(callee(info, call), pkg, names...)
}

// inBudget reports whether fn belongs to the budget module, whose calls clamp
// every time they are given to the deadline in their context.
func inBudget(fn *types.Func) bool {
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	p := fn.Pkg().Path()
	return p == budgetPath || strings.HasPrefix(p, budgetPath+"/")
}

// isVar reports whether e refers to the package-level variable pkg.name.
func isVar(info *types.Info, e ast.Expr, pkg, name string) bool {
	var id *ast.Ident
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		id = e
	case *ast.SelectorExpr:
		id = e.Sel
	default:
		return false
	}
	v, ok := info.Uses[id].(*types.Var)
	return ok && v.Pkg() != nil && v.Pkg().Path() == pkg && v.Name() == name && v.Parent() == v.Pkg().Scope()
}

// deadlineFuncs are the context functions that give a context a deadline.
var deadlineFuncs = []string{"WithTimeout", "WithDeadline", "WithTimeoutCause", "WithDeadlineCause"}

// isBoundingCall reports whether call gives its first argument a new bound:
// a context deadline derivation or any budget function.
func isBoundingCall(info *types.Info, call *ast.CallExpr) bool {
	fn := callee(info, call)
	return isPkgFunc(fn, "context", deadlineFuncs...) || inBudget(fn)
}

// inTestFile reports whether pos lies in a _test.go file. The HTTP checks
// skip tests, which talk to httptest servers on loopback.
func inTestFile(pass *analysis.Pass, pos token.Pos) bool {
	f := pass.Fset.File(pos)
	return f != nil && strings.HasSuffix(f.Name(), "_test.go")
}
