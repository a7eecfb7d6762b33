package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/timebudget/budget/cmd/budget/vet"
)

// vetMain runs budget vet: it loads the packages named by args, runs the
// checks of package vet over them, prints one line per finding and closes
// with a summary line (packages, files and checks, findings, suppressed). It
// returns 0 when nothing was found, 1 when something was, and 2 for a usage
// error, packages that could not be loaded, or a stop by ctx (Ctrl-C or
// SIGTERM).
func vetMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("budget vet", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	checks := fs.String("checks", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, vetUsage())
			return 0
		}
		fmt.Fprintf(stderr, "budget vet: %v\n\nRun 'budget vet --help' for usage.\n", err)
		return 2
	}
	analyzers := vet.Analyzers
	if *checks != "" {
		var err error
		if analyzers, err = vet.Lookup(strings.Split(*checks, ",")); err != nil {
			fmt.Fprintf(stderr, "budget vet: --checks: %v\n", err)
			return 2
		}
	}
	res, err := vet.Run(ctx, "", fs.Args(), analyzers)
	if err != nil && ctx.Err() != nil {
		// Run's go commands, and the compilers they started, were sent
		// SIGINT and then, if they lingered, SIGKILL as a process group
		// (go/packages starts each as a group of its own), so none
		// outlives this one.
		fmt.Fprintf(stderr, "budget vet: stopped: %v\n", context.Cause(ctx))
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "budget vet: %v\n", err)
		return 2
	}
	wd, _ := os.Getwd()
	for _, f := range res.Findings {
		if rel, err := filepath.Rel(wd, f.Pos.Filename); err == nil && !strings.HasPrefix(rel, "..") {
			f.Pos.Filename = rel
		}
		fmt.Fprintln(stdout, f)
	}
	fmt.Fprintln(stdout, res.Summary(len(analyzers)))
	if len(res.Findings) > 0 {
		return 1
	}
	return 0
}

// vetUsage is budget vet's help: its flags, exit codes and every check's
// documentation.
func vetUsage() string {
	var b strings.Builder
	b.WriteString(`Usage: budget vet [--checks LIST] [packages]

Reports code that loses, ignores or never sets a deadline. Packages are
named as for go build and go vet (default: the package in the current
directory); their test files are checked too. Each finding is printed on
stdout as

	file:line:col: message (check)

and the last line sums up what was checked and found:

	budget vet: 3 packages, 12 files, 7 checks: 1 finding, 0 suppressed by //budget:ignore

A finding that is right for the code as it stands is silenced by a
comment on its line or the line above, naming the check and saying why:

	//budget:ignore bgdeadline the audit entry is written even after the request ends

Flags:

	--checks LIST   run only these checks, comma-separated (default: all)

Exit status: 0 when nothing was found, 1 when something was, 2 for a
usage error or packages that do not load (a pattern matching nothing, a
syntax or type error).

The same checks run under go vet:

	go install github.com/timebudget/budget/cmd/budget/cmd/budget-vet
	go vet -vettool=$(which budget-vet) ./...
	go vet -vettool=$(which budget-vet) -fix -diff ./...   # show the fixes

Checks:
`)
	for _, a := range vet.Analyzers {
		summary, rest, _ := strings.Cut(a.Doc, "\n")
		fmt.Fprintf(&b, "\n%s: %s\n", a.Name, summary)
		for _, line := range strings.Split(strings.TrimSpace(rest), "\n") {
			if line == "" {
				b.WriteString("\n")
				continue
			}
			b.WriteString("\t" + line + "\n")
		}
	}
	return b.String()
}
