// Package vet holds the analyzers behind "budget vet": static checks for code
// that loses, ignores or never sets a deadline.
//
// Each analyzer is a [golang.org/x/tools/go/analysis.Analyzer], so it runs
// under any analysis driver: "budget vet ./..." (see [Run]), "go vet
// -vettool=$(which budget-vet) ./..." (the budget-vet command, built on
// unitchecker), gopls, or analysistest in tests.
//
// The checks are syntactic patterns resolved with go/types, tuned to stay
// quiet on code that is only unusual. Each one's Doc says what it reports
// and what it deliberately leaves alone.
package vet
