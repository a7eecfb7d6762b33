package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/timebudget/budget/cmd/budget/internal/audit"
	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

const auditUsage = `Usage: budget audit [--format text|json] FILE

Checks the timeouts of a service call graph declared in YAML (FILE) against
each other and against the user's budget:

	inverted     a caller gives up before its callee's attempts can end:
	             timeout(caller) > timeout(callee) + retries × (timeout(callee) + backoff)
	             must hold, where timeout(caller) is the smallest timeout of the
	             calls that reach the caller (the budget for the entry)
	over-budget  the entry's calls can take longer than the budget
	sequence     a service's calls, one after another, can take longer than it
	             is given, though each fits alone (a service's calls are
	             always made one after another: their worst cases add up)
	below-p99    a timeout is below the call's floor: the callee's p99 (its own
	             plus its callees'), or what the callee's own calls need
	no-timeout   a call has no timeout. A call written "timeout: budget" has
	             none of its own on purpose: it spends the rest of its
	             caller's budget, as a budget.Op call does, and is reported
	             only where that time cannot cover it (conflict)
	conflict     a service's calls at their floors do not fit the time it is
	             given: no timeouts satisfy both; reported once, no value
	cycle        calls lead back to a service already on the path

One rule decides each suggested timeout, so applying every suggestion leaves
nothing to suggest: from its callee's measurements a call has a floor (the
p99 with its callees', or what the callee's calls need) and a preference (2×
that p99, or what the callee's calls take at theirs); from the entry down, a
service whose calls have timeouts at their floors or above and fit what it is
given is left alone; otherwise its failing calls get their preference and, if
its calls still do not fit, every one of them is set the same fraction of the
way from its floor to its preference, the largest that fits. A call has at
most one finding.

It prints one line per finding, "caller -> callee: what is wrong; suggested
value", and a summary on stderr. Exit status: 0 when there are no findings,
1 when there are, 2 when FILE cannot be read or is malformed (reported as
FILE:LINE:COL: message).

The file:

	entry: edge
	budget: 3s            # what the user waits at the entry
	services:
	  edge:
	    calls:
	      - {to: search, timeout: 2s, retries: 1, backoff: 100ms}
	      - {to: ads, timeout: budget}   # the rest of the budget
	  search:
	    latency: {p50: 20ms, p99: 200ms}
	    calls:
	      - {to: db, timeout: 1.5s, retries: 2, backoff: 50ms}
	  db:
	    latency: {p50: 5ms, p99: 80ms}
	  ads:
	    latency: {p50: 10ms, p99: 40ms}

A call may list fallbacks tried in order after it failed, each a call
({to: SERVICE, timeout: DUR}) or a local answer ({local: cache, latency:
{p50: DUR, p99: DUR}}), and a share (the fraction of requests that make
it; audit assumes every call is made). A service may set workers (requests
served at a time), host (another service whose servers it runs on) and
cancellable (its work stops when its caller leaves); budget sim uses those.

Bounds, so that no file makes it run for long or run out of memory (each
refused with exit status 2 and the position): FILE must be a regular file
(not a directory, a device or a FIFO) of at most 16 MiB holding one YAML
document of at most 5,000,000 nodes, each alias counted as a copy of what
it names; at most 100,000 services, 10,000 calls per service, 100
fallbacks per call and 1,000,000 calls in all, fallbacks counted; durations
of at most 1h, and a service's calls one after another in the worst case,
or its p99 with its callees', at most about 50 years. Names may not contain
spaces, control characters or bidirectional formatting characters
(U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069). Within those
bounds audit takes time linear in FILE's size, up to n log n: the largest
chain, 100,000 services, takes a few seconds.

Flags:

	--format FORMAT   text (default) or json
`

func auditMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	format := fs.String("format", "text", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, auditUsage)
			return 0
		}
		fmt.Fprintf(stderr, "budget audit: %v\n\n%s", err, auditUsage)
		return 2
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(stderr, "budget audit: --format %q: want text or json\n", *format)
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "budget audit: want one FILE, got %d arguments\n\n%s", fs.NArg(), auditUsage)
		return 2
	}
	top, err := readTopology(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "budget audit: %v\n", err)
		return 2
	}
	rep := audit.Check(top)
	if *format == "json" {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "budget audit: %v\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "budget audit: %s: %s\n", fs.Arg(0), rep.Summary())
	if len(rep.Findings) > 0 {
		return 1
	}
	return 0
}

// readTopology reads and parses a topology file; errors name the file and,
// for a malformed one, the line and column. It reads regular files only,
// through topology's bounds (see auditUsage).
func readTopology(path string) (*topology.Topology, error) {
	return topology.ReadFile(path)
}
