package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/sim"
)

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

func simMain(args []string, stdout, stderr io.Writer) int {
	f, err := parseSimFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, simUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "budget sim: %v\nRun 'budget sim --help' for usage.\n", err)
		return 2
	}
	top, err := readTopology(f.file)
	if err != nil {
		fmt.Fprintf(stderr, "budget sim: %v\n", err)
		return 2
	}
	if cyc, pos := top.Cycle(); cyc != nil {
		fmt.Fprintf(stderr, "budget sim: %s:%d:%d: calls form a cycle %s, which cannot be simulated\n",
			f.file, pos.Line, pos.Col, strings.Join(cyc, " -> "))
		return 2
	}
	for _, s := range f.faults {
		ft, err := sim.ParseFault(top, s)
		if err != nil {
			fmt.Fprintf(stderr, "budget sim: --fault %v\n", err)
			return 2
		}
		f.cfg.Faults = append(f.cfg.Faults, ft)
	}
	if err := f.cfg.Validate(top); err != nil {
		fmt.Fprintf(stderr, "budget sim: %s: %v\n", f.file, err)
		var we *sim.WorkError
		if errors.As(err, &we) {
			fmt.Fprintf(stderr, "budget sim: fewer --requests, or --max-calls %d to run it anyway\n", we.Calls)
		}
		return 2
	}
	start := time.Now()
	results, err := sim.Run(top, f.cfg)
	if err != nil {
		fmt.Fprintf(stderr, "budget sim: %s: %v\n", f.file, err)
		return 2
	}
	rep := sim.NewReport(f.file, top.Entry, float64(top.Budget)/1e6, len(top.Names), f.cfg, results)
	rep.WallSeconds = time.Since(start).Seconds()
	if err := rep.WriteTable(stdout); err != nil {
		fmt.Fprintf(stderr, "budget sim: %v\n", err)
		return 1
	}
	if err := writeSimReports(rep, f.out, stdout); err != nil {
		fmt.Fprintf(stderr, "budget sim: %v\n", err)
		return 1
	}
	return 0
}

func writeSimReports(rep *sim.Report, dir string, stdout io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	html, err := rep.RenderHTML()
	if err != nil {
		return err
	}
	jsonPath := filepath.Join(dir, "report.json")
	jf, err := os.Create(jsonPath)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(jf); err != nil {
		jf.Close()
		return err
	}
	if err := jf.Close(); err != nil {
		return err
	}
	htmlPath := filepath.Join(dir, "report.html")
	if err := os.WriteFile(htmlPath, html, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s\nwrote %s\n", htmlPath, jsonPath)
	return nil
}
