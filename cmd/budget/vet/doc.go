// Package vet holds the analyzers behind "budget vet": static checks for code
// that loses, ignores or never sets a deadline.
//
// Each analyzer is a [golang.org/x/tools/go/analysis.Analyzer], so it runs
// under any analysis driver: "budget vet ./..." (see [Run]), "go vet
// -vettool=$(which budget-vet) ./..." (the budget-vet command, built on
// unitchecker; add -fix, or -fix -diff, to apply or show the suggested
// fixes), gopls, or analysistest in tests.
//
// [Run] drives the analyzers in process with x/tools' checker API over
// packages loaded by go/packages, rather than re-executing the budget binary
// under "go vet -vettool". That keeps "budget vet" one process whose output
// format, exit codes and load errors are its own and can be tested by
// calling it, with no environment switch that turns the CLI into a different
// program. go vet's own route, with its build cache and -fix, stays
// available through budget-vet.
//
// Two rules decide where a context counts as in scope. bgdeadline reports a
// fresh context.Background() or TODO() passed straight to a synchronous
// call (doWork(context.Background())) only where the innermost function has
// a context.Context or *http.Request parameter of its own; calls started
// with go or defer, function literals without a context parameter
// (goroutines, callbacks), cleanup calls (Close, Shutdown, Rollback,
// Release), code after <-ctx.Done() and test files are left alone, since
// work that outlives the request legitimately starts afresh (better said
// with context.WithoutCancel or budget.Detach). httpclient decides whether
// an http.Client without Timeout has a deadline in reach where the client
// is used: a client kept in a local variable is judged by its own function
// alone, not by whether some other function of the package sends requests
// with a context.
//
// The checks are syntactic patterns resolved with go/types, tuned to stay
// quiet on code that is only unusual. Each one's Doc says what it reports and
// what it deliberately leaves alone. None of them uses facts, so each package
// is checked on its own and dependencies are read from export data.
package vet
