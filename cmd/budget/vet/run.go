package vet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"go/token"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"
)

// Analyzers are all the checks of budget vet, in the order its help lists
// them.
var Analyzers = []*analysis.Analyzer{
	BgDeadline,
	HTTPClient,
	HTTPServer,
	RetrySleep,
	RetryExpired,
	WithoutCancel,
	ConstTimeout,
}

// Finding is one report of a check at a position in the source.
type Finding struct {
	Pos     token.Position // file, line and column of the finding
	Check   string         // the analyzer's name, such as "bgdeadline"
	Message string         // what is wrong and what to do instead
}

// String formats f as file:line:col: message (check), the form compilers
// and go vet use, so editors can jump to it.
func (f Finding) String() string {
	return fmt.Sprintf("%s: %s (%s)", f.Pos, f.Message, f.Check)
}

// Result is what [Run] checked and found.
type Result struct {
	// Findings are sorted by position, each reported once.
	Findings []Finding
	// Packages and Files count what was checked: the packages matching the
	// patterns (a package and its external test package count once) and
	// their Go files, test files included.
	Packages, Files int
	// Suppressed counts the findings an //budget:ignore directive
	// silenced; they are not in Findings.
	Suppressed int
}

// Run loads the packages matching patterns, as the go command resolves them
// in dir (the current directory when empty), with their test files, and runs
// analyzers on them. It returns the findings sorted by position, each
// reported once, leaving out those an //budget:ignore directive silences,
// and counts what it checked. An error means the packages could not be
// loaded or did not type-check; nothing was analyzed then.
func Run(ctx context.Context, dir string, patterns []string, analyzers []*analysis.Analyzer) (Result, error) {
	return run(ctx, dir, nil, patterns, analyzers)
}

// run is Run with overlay: file contents that replace (or add) the named
// files, by absolute path, as go/packages' Overlay does. The README test
// checks the README's example through it, without writing a file.
func run(ctx context.Context, dir string, overlay map[string][]byte, patterns []string, analyzers []*analysis.Analyzer) (Result, error) {
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	cfg := &packages.Config{
		Context: ctx,
		Dir:     dir,
		Mode:    packages.LoadSyntax | packages.NeedModule,
		Tests:   true,
		Overlay: overlay,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return Result{}, err
	}
	if err := loadErrors(pkgs); err != nil {
		return Result{}, err
	}
	if len(pkgs) == 0 {
		return Result{}, fmt.Errorf("no packages match %s", strings.Join(patterns, " "))
	}
	graph, err := checker.Analyze(analyzers, pkgs, nil)
	if err != nil {
		return Result{}, err
	}
	var res Result
	seen := make(map[Finding]bool)
	paths, files := map[string]bool{}, map[string]bool{}
	sets := map[*packages.Package]ignoreSet{}
	var errs []error
	for act := range graph.All() {
		if !act.IsRoot {
			continue
		}
		pkg := act.Package
		if !strings.HasSuffix(pkg.PkgPath, ".test") { // the test binary's generated main
			paths[strings.TrimSuffix(pkg.PkgPath, "_test")] = true
			for _, f := range pkg.CompiledGoFiles {
				files[f] = true
			}
		}
		if act.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", pkg.PkgPath, act.Analyzer.Name, act.Err))
			continue
		}
		set, ok := sets[pkg]
		if !ok {
			set = ignores(pkg.Fset, pkg.Syntax)
			sets[pkg] = set
		}
		for _, d := range act.Diagnostics {
			f := Finding{Pos: pkg.Fset.Position(d.Pos), Check: act.Analyzer.Name, Message: d.Message}
			if seen[f] {
				continue
			}
			seen[f] = true
			if set.covers(f.Pos, f.Check) {
				res.Suppressed++
				continue
			}
			res.Findings = append(res.Findings, f)
		}
	}
	if len(errs) > 0 {
		return Result{}, errors.Join(errs...)
	}
	slices.SortFunc(res.Findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Pos.Filename, b.Pos.Filename), cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column), cmp.Compare(a.Check, b.Check))
	})
	res.Packages, res.Files = len(paths), len(files)
	return res, nil
}

// Summary is budget vet's closing line: what was checked and what was
// found, such as "budget vet: 3 packages, 12 files, 7 checks: 2 findings,
// 1 suppressed by //budget:ignore".
func (r Result) Summary(checks int) string {
	return fmt.Sprintf("budget vet: %s, %s, %s: %s, %d suppressed by %s", count(r.Packages, "package"), count(r.Files, "file"),
		count(checks, "check"), count(len(r.Findings), "finding"), r.Suppressed, IgnoreDirective)
}

// count says "1 package" or "3 packages".
func count(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// loadErrors collects the errors of the loaded packages and their
// dependencies: a pattern that matches nothing, a missing import, a syntax
// or type error. At most ten are listed.
func loadErrors(pkgs []*packages.Package) error {
	var msgs []string
	seen := make(map[string]bool)
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		precise := slices.ContainsFunc(p.Errors, func(e packages.Error) bool { return e.Kind != packages.ListError })
		for _, e := range p.Errors {
			if precise && e.Kind == packages.ListError {
				continue // the go command's compile error repeats the type error
			}
			s := e.Error()
			if e.Pos == "" || e.Pos == "-" {
				s = e.Msg // no position to show: "-: directory not found" says less
			}
			if !seen[s] {
				seen[s] = true
				msgs = append(msgs, s)
			}
		}
	})
	if len(msgs) == 0 {
		return nil
	}
	if len(msgs) > 10 {
		msgs = append(msgs[:10], fmt.Sprintf("and %d more errors", len(msgs)-10))
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// Lookup returns the analyzers named in names, or an error naming the first
// unknown one.
func Lookup(names []string) ([]*analysis.Analyzer, error) {
	var out []*analysis.Analyzer
	for _, n := range names {
		i := slices.IndexFunc(Analyzers, func(a *analysis.Analyzer) bool { return a.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown check %q", n)
		}
		if !slices.Contains(out, Analyzers[i]) {
			out = append(out, Analyzers[i])
		}
	}
	return out, nil
}
