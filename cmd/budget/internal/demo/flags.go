package demo

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/overload"
	"github.com/timebudget/budget/cmd/budget/internal/scenario"
	"github.com/timebudget/budget/httpbudget"
)

// demoConfig is what the demo's flags set.
type demoConfig struct {
	// page is the live /debug/budget page of the run, or nil: the edges'
	// Ops register with it and their budgets report to it.
	page *httpbudget.DebugPage
	// Budget is --budget, the time a user waits; requests and
	// concurrency are --requests and --concurrency, per pattern and
	// scenario.
	Budget      time.Duration
	requests    int
	concurrency int
	// Faults is --fault by dependency name.
	Faults    map[string]scenario.Fault
	Scenarios []string // a subset of scenarioKeys, in that order
	// Out is --out, where the reports go; overload is the overload case's
	// own configuration, which no flag changes.
	Out      string
	overload overload.Config
	// Postgres is the PostgreSQL URL the checkout scenario's payment work
	// runs against; empty to keep its fake. --postgres sets it; demoMain
	// falls back to $BUDGET_TEST_POSTGRES when the server answers.
	Postgres string
	// DBNote says, when postgres is empty, why and how to enable the hop.
	DBNote string
}

// Has reports whether the scenario key is to run.
func (c *demoConfig) Has(key string) bool { return slices.Contains(c.Scenarios, key) }

var scenarioKeys = []string{"geo", "checkout", "overload"}

// Defaults, chosen so the default run takes about 30 seconds on two cores.
const (
	defaultBudget      = 300 * time.Millisecond
	defaultRequests    = 120
	defaultConcurrency = 20
	DefaultFault       = "geometry=hang,payment=slowdown:1s@0.25"
	defaultScenario    = "all"
	defaultOut         = "out"

	minBudget = 20 * time.Millisecond
	maxBudget = 10 * time.Second
)

const Usage = `Usage: budget demo [flags]

Starts an edge and its dependencies on 127.0.0.1 (HTTP and gRPC), injects
faults and sends the same traffic through four patterns, one after another:

	per-call timeouts     each hop its own fixed timeout (careful Go code:
	                      context.WithTimeout(r.Context(), t) per call)
	shared deadline       one budget from the edge, spent down, sent on the wire
	deadline + admission  the same, and each hop admitted only when its
	                      measured latency fits what is left
	no timeout            none; the demo cuts each request off at 3× the budget

Scenarios: geo (resolve → retrieve → geometry, whose ladder is exact →
simplified → cache), checkout (inventory → pricing → payment), and overload
(a dependency slows under a 200-worker service; goodput of the requests
that do not touch it, with and without budgets). The overload case runs at
half its full-size times (the dependency slows from 25ms to 2.5s, the user
waits 500ms) and at its own fixed rate; --requests and --concurrency apply
to geo and checkout.

It prints progress to stderr and a table to stdout, and writes report.html
(self-contained, charts included) and report.json to --out.

Flags:

	--budget DURATION     the time a user waits for one request (default 300ms,
	                      from 20ms to 10s); per-call timeouts derive from it
	--requests N          requests per pattern and scenario (default 120)
	--concurrency N       requests in flight at a time (default 20)
	--fault LIST          faults to inject, comma-separated DEP=KIND, or none
	                      (default geometry=hang,payment=slowdown:1s@0.25)
	                        DEP:  resolve, retrieve, geometry, inventory,
	                              pricing, payment
	                        KIND: hang            never answers by itself
	                              fail            fails at once
	                              slow:DUR        every call takes DUR
	                              slowdown:DUR[@SHARE]
	                                              normal until SHARE of the
	                                              traffic was sent (default
	                                              0.5), then DUR
	--scenario LIST       comma-separated geo, checkout, overload, or all
	                      (default all)
	--out DIR             directory for report.html and report.json, created
	                      if missing (default ./out)
	--postgres URL        run checkout's payment work in PostgreSQL as
	                      SELECT pg_sleep(the fault's time), through pgxbudget
	                      in the budget patterns and plain pgx otherwise, and
	                      measure how long the server runs on after the caller
	                      left; off to skip (default $BUDGET_TEST_POSTGRES if it
	                      answers within 1s, else skipped)
	-h, --help            show this help
`

// ParseFlags parses the demo's flags. It returns flag.ErrHelp when help
// was asked for, and otherwise an error that names the flag at fault.
func ParseFlags(args []string) (*demoConfig, error) {
	cfg := &demoConfig{
		Budget: defaultBudget, requests: defaultRequests, concurrency: defaultConcurrency,
		Out: defaultOut, overload: overload.Default(),
	}
	faultS, scenarioS := DefaultFault, defaultScenario
	fs := flag.NewFlagSet("budget demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.Var(durationValue{&cfg.Budget}, "budget", "")
	fs.Var(intValue{&cfg.requests}, "requests", "")
	fs.Var(intValue{&cfg.concurrency}, "concurrency", "")
	fs.StringVar(&faultS, "fault", faultS, "")
	fs.StringVar(&scenarioS, "scenario", scenarioS, "")
	fs.StringVar(&cfg.Out, "out", cfg.Out, "")
	fs.StringVar(&cfg.Postgres, "postgres", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		// The flag package names flags with one dash; the usage shows two.
		msg := strings.Replace(err.Error(), "flag -", "flag --", 1)
		msg = strings.Replace(msg, "not defined: -", "not defined: --", 1)
		return nil, errors.New(msg)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))
	}
	switch {
	case cfg.Budget < minBudget || cfg.Budget > maxBudget:
		return nil, fmt.Errorf("--budget %s is outside [%s, %s]", cfg.Budget, minBudget, maxBudget)
	case cfg.requests < 1 || cfg.requests > 100_000:
		return nil, fmt.Errorf("--requests %d is outside [1, 100000]", cfg.requests)
	case cfg.concurrency < 1 || cfg.concurrency > 1000:
		return nil, fmt.Errorf("--concurrency %d is outside [1, 1000]", cfg.concurrency)
	case strings.TrimSpace(cfg.Out) == "":
		return nil, errors.New("--out must name a directory")
	}
	var err error
	if cfg.Faults, err = scenario.ParseFaults(faultS); err != nil {
		return nil, fmt.Errorf("--fault: %w", err)
	}
	if cfg.Scenarios, err = parseScenarios(scenarioS); err != nil {
		return nil, fmt.Errorf("--scenario: %w", err)
	}
	return cfg, nil
}

// parseScenarios parses --scenario into scenario keys in their canonical
// order, so a report lists them the same way however they were given.
func parseScenarios(s string) ([]string, error) {
	if strings.TrimSpace(s) == "all" {
		return slices.Clone(scenarioKeys), nil
	}
	want := map[string]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if !slices.Contains(scenarioKeys, item) {
			return nil, fmt.Errorf("unknown scenario %q (geo, checkout, overload or all)", item)
		}
		want[item] = true
	}
	var out []string
	for _, k := range scenarioKeys {
		if want[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// durationValue is a flag.Value for a time.Duration with a clearer error than
// the flag package's own.
type durationValue struct{ p *time.Duration }

// String returns the duration, as the flag package shows a default.
func (v durationValue) String() string {
	if v.p == nil {
		return ""
	}
	return v.p.String()
}

// Set parses s as a duration such as 300ms.
func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 300ms or 2s", s)
	}
	*v.p = d
	return nil
}

// intValue is a flag.Value for an int with a clearer error.
type intValue struct{ p *int }

// String returns the number, as the flag package shows a default.
func (v intValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.Itoa(*v.p)
}

// Set parses s as a whole number.
func (v intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", s)
	}
	*v.p = n
	return nil
}
