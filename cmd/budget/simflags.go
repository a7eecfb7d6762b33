package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/sim"
	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

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
	fs.Func("horizon", "", func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 || d > topology.MaxDuration {
			return fmt.Errorf("%q is not a duration in (0, %s], as in 30s", s, topology.MaxDuration)
		}
		f.cfg.Horizon = d
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
