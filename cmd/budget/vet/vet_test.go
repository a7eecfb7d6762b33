package vet_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/timebudget/budget/cmd/budget/vet"
	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/analysistest"
	"golang.org/x/tools/go/analysis/passes/inspect"
)

// TestAnalyzers checks every analyzer against its package under
// testdata/src: each true positive carries a // want comment, each near miss
// must stay silent, and the suggested fixes must turn each file into its
// .golden twin.
//
// All analyzers run in one analysistest load, through a suite analyzer that
// calls each of them on the same pass. analysistest type-checks net/http and
// its dependencies from source on every load, which under -race costs tens
// of CPU-seconds; one load instead of seven keeps this package from
// crowding the timing-sensitive demo tests that go test runs beside it.
// The suite also checks that each analyzer reports only in its own package,
// so every other package is a near miss for it.
func TestAnalyzers(t *testing.T) {
	t.Parallel()
	own := map[string][]string{ // analyzer → testdata packages it may report in
		vet.HTTPClient.Name: {"httpclient", "httpclientctx"},
	}
	suite := &analysis.Analyzer{
		Name:     "suite",
		Doc:      "run every budget vet analyzer",
		Requires: []*analysis.Analyzer{inspect.Analyzer},
		Run: func(pass *analysis.Pass) (any, error) {
			for _, a := range vet.Analyzers {
				p := *pass
				p.Analyzer = a
				p.Report = func(d analysis.Diagnostic) {
					pkgs := own[a.Name]
					if pkgs == nil {
						pkgs = []string{a.Name}
					}
					path := strings.TrimSuffix(pass.Pkg.Path(), "_test")
					if !contains(pkgs, path) {
						t.Errorf("%s reported in package %s: %s", a.Name, pass.Pkg.Path(), d.Message)
					}
					pass.Report(d)
				}
				if _, err := a.Run(&p); err != nil {
					return nil, err
				}
			}
			return nil, nil
		},
	}
	var pkgs []string
	for _, a := range vet.Analyzers {
		pkgs = append(pkgs, a.Name)
	}
	pkgs = append(pkgs, "httpclientctx")
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), suite, pkgs...)
}

// TestAnalyzersNeedOnlyInspect guards TestAnalyzers' suite, which hands
// each analyzer a pass holding the inspector's result and nothing else.
func TestAnalyzersNeedOnlyInspect(t *testing.T) {
	t.Parallel()
	for _, a := range vet.Analyzers {
		if len(a.Requires) != 1 || a.Requires[0] != inspect.Analyzer || len(a.FactTypes) > 0 {
			t.Errorf("%s: requires %v, facts %v; TestAnalyzers' suite supports the inspector only", a.Name, a.Requires, a.FactTypes)
		}
		if err := analysis.Validate([]*analysis.Analyzer{a}); err != nil {
			t.Errorf("%s: %v", a.Name, err)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestWithIgnores checks the directive under another driver than budget
// vet (here analysistest, as go vet -vettool=budget-vet runs it): the
// finding it names is dropped, a finding of another check stays.
func TestWithIgnores(t *testing.T) {
	t.Parallel()
	a := vet.WithIgnores([]*analysis.Analyzer{vet.BgDeadline})[0]
	analysistest.Run(t, filepath.Join(analysistest.TestData(), "ignore"), a, "ignored")
}
