package vet

import (
	"go/ast"
	"go/token"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// IgnoreDirective is the comment that silences named checks on its own line
// and on the line after it:
//
//	//budget:ignore bgdeadline the audit log must be written even after the request ends
//	go audit(context.Background(), entry)
//
// The directive names one check, or several separated by commas, and then
// says why: a finding silenced without a reason is a finding nobody can
// review. budget vet counts what it silenced in its summary line; under go
// vet -vettool the budget-vet command honours the same directive
// ([WithIgnores]).
const IgnoreDirective = "//budget:ignore"

// ignoreSet holds the directives of some files: file name → line → the
// checks silenced there.
type ignoreSet map[string]map[int][]string

// ignores collects the //budget:ignore directives of files. A directive
// with no check name, or no reason after it, silences nothing.
func ignores(fset *token.FileSet, files []*ast.File) ignoreSet {
	set := ignoreSet{}
	for _, f := range files {
		for _, g := range f.Comments {
			for _, c := range g.List {
				rest, ok := strings.CutPrefix(c.Text, IgnoreDirective+" ")
				if !ok {
					continue
				}
				fields := strings.Fields(rest)
				if len(fields) < 2 {
					continue
				}
				pos := fset.Position(c.Slash)
				lines := set[pos.Filename]
				if lines == nil {
					lines = map[int][]string{}
					set[pos.Filename] = lines
				}
				checks := strings.Split(fields[0], ",")
				lines[pos.Line] = append(lines[pos.Line], checks...)
				lines[pos.Line+1] = append(lines[pos.Line+1], checks...)
			}
		}
	}
	return set
}

// covers reports whether a directive silences check at pos.
func (s ignoreSet) covers(pos token.Position, check string) bool {
	return slices.Contains(s[pos.Filename][pos.Line], check)
}

// WithIgnores returns copies of analyzers that drop the findings an
// //budget:ignore directive silences, for drivers other than budget vet
// (the budget-vet command under go vet -vettool, gopls). budget vet's [Run]
// applies the directives itself, so that it can count them.
func WithIgnores(analyzers []*analysis.Analyzer) []*analysis.Analyzer {
	out := make([]*analysis.Analyzer, len(analyzers))
	for i, a := range analyzers {
		w := *a
		w.Run = func(pass *analysis.Pass) (any, error) {
			set := ignores(pass.Fset, pass.Files)
			p := *pass
			p.Report = func(d analysis.Diagnostic) {
				if !set.covers(pass.Fset.Position(d.Pos), a.Name) {
					pass.Report(d)
				}
			}
			return a.Run(&p)
		}
		out[i] = &w
	}
	return out
}
