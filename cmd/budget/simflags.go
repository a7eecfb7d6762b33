package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/timebudget/budget/cmd/budget/internal/sim"
)

// simUsage is what budget sim --help prints.
const simUsage = `Usage: budget sim [flags] FILE

Simulates the call graph declared in FILE (the format of budget audit) in
virtual time, with the same traffic and faults under four patterns:

	per-call timeouts     each attempt its call's configured timeout, fresh at
	                      each hop; retries with backoff; nothing handed down
	shared deadline       one deadline from the entry's budget; each attempt
	                      gets min(timeout, time left) and the callee stops at it
	deadline + admission  the same, and an attempt is refused before it starts
	                      by the caller's budget.Op for the callee (the
	                      library's own admission, on virtual time); fallbacks
	                      keep their time
	no timeout            none; the user gives up at 3× the budget

Each service takes a worker from its pool (workers in FILE, default 200) for
its whole request, does its own work (log-normal, fitted to its p50 and p99;
no latency means none) and makes its calls in order. A service whose work
does not stop when its caller leaves (cancellable: false, the default) runs
on, holding its worker, until it ends or a deadline handed to it passes.

It prints a table and writes report.json and report.html (charts inline) to
--out. The run is deterministic given --seed.

Flags:

	--requests N       requests per pattern (default 100000)
	--rate R           send R requests per second of virtual time, an open
	                   loop that can overload the services
	--concurrency C    or keep C users in a closed loop, each sending its next
	                   request when the last ended (default 100)
	--seed N           seed of the random draws (default 1)
	--workers N        pool size of services that declare none (default 200)
	--fault SVC=KIND   inject a fault, repeatable; KIND is hang, slow:DURATION
	                   or fail:P (each call fails at once with probability P)
	--out DIR          where to write the reports (default out)
	--max-calls N      the most calls the run may make (default 5000000000):
	                   before it starts, sim estimates 4 patterns × requests ×
	                   the calls one request can make, every retry and
	                   fallback counted as if each attempt failed, and refuses
	                   a run estimated past N

FILE is read within the bounds budget audit --help lists.

Exit status: 0 on success, 1 when the reports cannot be written, 2 for bad
flags, a malformed FILE (reported as FILE:LINE:COL: message) or a run
estimated past --max-calls.
`

// simFlags is what sim's command line asks for: the run's configuration,
// the faults as written (parsed once FILE is read), the report directory and
// FILE.
type simFlags struct {
	cfg    sim.Config
	out    string
	faults []string
	file   string
}

// parseSimFlags parses sim's arguments; flags may come before or after FILE.
func parseSimFlags(args []string) (*simFlags, error) {
	f := &simFlags{cfg: sim.Config{Seed: 1}, out: "out"}
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	positive := func(name string, dst *int) {
		fs.Func(name, "", func(s string) error {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return fmt.Errorf("%q is not a whole number of at least 1", s)
			}
			*dst = n
			return nil
		})
	}
	positive("requests", &f.cfg.Requests)
	positive("concurrency", &f.cfg.Concurrency)
	positive("workers", &f.cfg.Workers)
	fs.Func("max-calls", "", func(s string) error {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a whole number of at least 1", s)
		}
		f.cfg.MaxCalls = n
		return nil
	})
	fs.Func("rate", "", func(s string) error {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || !(r > 0 && r <= 1e9) {
			return fmt.Errorf("%q is not a rate in (0, 1e9] per second", s)
		}
		f.cfg.Rate = r
		return nil
	})
	fs.Func("seed", "", func(s string) error {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a seed (a whole number)", s)
		}
		f.cfg.Seed = n
		return nil
	})
	fs.Func("fault", "", func(s string) error { f.faults = append(f.faults, s); return nil })
	fs.Func("out", "", func(s string) error {
		if s == "" {
			return errors.New("empty directory")
		}
		f.out = s
		return nil
	})
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			// Name flags as the usage writes them: --requests, not -requests.
			return nil, errors.New(strings.Replace(err.Error(), " flag -", " --", 1))
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) != 1 {
		return nil, fmt.Errorf("want one FILE, got %d", len(files))
	}
	f.file = files[0]
	return f, nil
}
