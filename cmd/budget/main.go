// Command budget is the command-line companion of the budget library.
//
// Its first subcommand, demo, starts real services on loopback (an edge, and
// dependencies over HTTP and gRPC), injects faults into them and measures four
// ways of spending time on the same traffic: per-call timeouts, one shared
// deadline, a shared deadline with admission, and no timeout at all. It prints
// a table and writes report.html and report.json.
//
//	go run ./cmd/budget demo
//	go run ./cmd/budget demo --help
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// SIGTERM (what kill, timeout and CI runners send) ends a command as
	// Ctrl-C does: the context's end stops the demo's services and budget
	// vet's go commands, which a process killed outright would leave
	// running. syscall.SIGTERM exists on every platform Go supports.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command with args (without the program name) and returns its
// exit code: 0 on success, 1 when the work failed, 2 for a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// runContext is run with a context that ends the command early (Ctrl-C,
// SIGTERM).
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "demo":
		return demoMain(ctx, args[1:], stdout, stderr)
	case "audit":
		return auditMain(args[1:], stdout, stderr)
	case "sim":
		return simMain(args[1:], stdout, stderr)
	case "vet":
		return vetMain(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "budget: unknown command %q\n\n%s", args[0], usage)
	return 2
}

const usage = `budget gives a request one deadline, spends it down across every hop, and
refuses to start work that cannot finish.

Usage:

	budget <command> [flags]

Commands:

	demo    run services on loopback with injected faults and compare per-call
	        timeouts, a shared deadline, a shared deadline with admission and
	        no timeout; prints a table, writes report.html and report.json
	audit   check the timeouts of a call graph declared in YAML against each
	        other and the budget; one line per finding with a suggested value
	sim     simulate a call graph declared in YAML in virtual time under the
	        same four patterns; prints a table, writes report.html and .json
	vet     report code that loses, ignores or never sets a deadline
	        (budget vet ./...)

Run 'budget demo --help' for the demo's flags; audit, sim and vet take --help too.
`
