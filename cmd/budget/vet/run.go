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

// Run loads the packages matching patterns, as the go command resolves them
// in dir (the current directory when empty), with their test files, and runs
// analyzers on them. It returns the findings sorted by position, each
// reported once. An error means the packages could not be loaded or did not
// type-check; nothing was analyzed then.
func Run(ctx context.Context, dir string, patterns []string, analyzers []*analysis.Analyzer) ([]Finding, error) {
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	cfg := &packages.Config{
		Context: ctx,
		Dir:     dir,
		Mode:    packages.LoadSyntax | packages.NeedModule,
		Tests:   true,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	if err := loadErrors(pkgs); err != nil {
		return nil, err
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("no packages match %s", strings.Join(patterns, " "))
	}
	graph, err := checker.Analyze(analyzers, pkgs, nil)
	if err != nil {
		return nil, err
	}
	seen := make(map[Finding]bool)
	var out []Finding
	var errs []error
	for act := range graph.All() {
		if !act.IsRoot {
			continue
		}
		if act.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", act.Package.PkgPath, act.Analyzer.Name, act.Err))
			continue
		}
		for _, d := range act.Diagnostics {
			f := Finding{Pos: act.Package.Fset.Position(d.Pos), Check: act.Analyzer.Name, Message: d.Message}
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(out, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Pos.Filename, b.Pos.Filename), cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column), cmp.Compare(a.Check, b.Check))
	})
	return out, nil
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
