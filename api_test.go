package budget_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// rootPackage parses the root package's non-test files.
func rootPackage(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return fset, files
}

// The root package stays small enough to hold in one's head: at most 134
// exported names (types, functions, methods, constants and variables, as
// go doc -all lists them; struct fields are not counted). Adding a name
// means taking one away, or raising this bound in a change that says why.
func TestExportedNamesStayFew(t *testing.T) {
	t.Parallel()
	fset, files := rootPackage(t)
	p, err := doc.NewFromFiles(fset, files, "github.com/timebudget/budget")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				if ast.IsExported(n) {
					names = append(names, n)
				}
			}
		}
	}
	values(p.Consts)
	values(p.Vars)
	for _, f := range p.Funcs {
		names = append(names, f.Name)
	}
	for _, ty := range p.Types {
		names = append(names, ty.Name)
		values(ty.Consts)
		values(ty.Vars)
		for _, f := range ty.Funcs {
			names = append(names, f.Name)
		}
		for _, m := range ty.Methods {
			names = append(names, ty.Name+"."+m.Name)
		}
	}
	// 130, Read's Reading (the one reading adapters take), RedactError, and
	// Op.BeginAt and Op.EndAt: an attempt's admission and end on a clock of
	// the caller's, which budget sim (another module) needs to drive a real
	// Op on virtual time rather than a model of one.
	// 142, criticality: Criticality, its String, Sheddable,
	// DefaultCriticality, Critical, ParseCriticality, WithCriticality and
	// CriticalityFrom, the class a request is admitted, queued and sent with;
	// 143, Op.BeginClassAt, BeginAt for an attempt of a given class, so that
	// simulations and tests on virtual time drive a mix of classes.
	// 145, EventEject and EventRecover: a balancer's ejection and recovery
	// of a replica (grpcbudget's budget_aware balancer, httpbudget.Picker).
	// 148: Ask, the attempt AdmitAt and BeginAt take (BeginClassAt folded
	// into BeginAt: 0); WithProbe and IsProbe, a probe marked end to end;
	// Observers, one observer for several.
	// 167, uncertain outcomes: Sent with its String and its four values
	// (NotSent, ServerRefused, MaybeExecuted, Executed), MarkSent and SentOf
	// (how an adapter says how far an attempt got, and how Retry reads it),
	// OutcomeUncertain (a retry not made because the work may have run),
	// WithIdempotencyKey and IdempotencyKeyFrom (one key per logical call).
	// 169: DoNotRetry (an adapter's client marks a server's "do not retry"
	// answer) and GaveUp (a server tells whether to send that answer).
	const limit = 169
	if len(names) > limit {
		t.Errorf("the root package exports %d names, more than %d:\n%s", len(names), limit, strings.Join(names, " "))
	}
	t.Logf("%d exported names", len(names))
}

// Functions stay short enough to read at a glance: none in the root package
// is longer than 60 lines.
func TestNoFunctionOverSixtyLines(t *testing.T) {
	t.Parallel()
	fset, files := rootPackage(t)
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			from, to := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := to.Line - from.Line + 1; n > 60 {
				t.Errorf("%s:%d: %s is %d lines long", from.Filename, from.Line, fd.Name.Name, n)
			}
		}
	}
}
