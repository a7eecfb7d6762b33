// Package sim simulates a service call graph, declared as a topology, in
// virtual time: requests arrive at the entry, each service takes a worker
// from its pool, does its own work (drawn from a log-normal distribution
// fitted to its declared p50 and p99) and makes its calls one after another,
// with timeouts, retries, backoff and fallbacks. Faults make a service hang,
// slow down or fail. The same traffic runs under four patterns of spending
// time, as in budget demo: per-call timeouts, one shared deadline, a shared
// deadline with admission, and no timeout.
//
// It is a discrete-event simulation: one agenda of timed events, no
// goroutine per request and no sleeping, so a million requests through a
// 200-service graph take seconds. A run is deterministic given its seed.
//
// Its work is bounded before it starts: Validate estimates the calls a run
// can make, patterns × requests × CallsPerRequest (every attempt and
// fallback counted, as if each failed), and refuses with a *WorkError past
// Config.MaxCalls, DefaultMaxCalls (5 billion) by default. Each further
// level of fan-out multiplies the calls of a request, so a 10 KB file can
// ask for 20 hours; the estimate takes time linear in the topology.
package sim

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// Pattern is one way of spending time across the hops.
type Pattern int

// The four patterns, in the order reports show them.
const (
	// PerCall gives each attempt its call's configured timeout, fresh at
	// every hop; nothing is handed to the callee, so a callee that does not
	// stop when its caller leaves runs on.
	PerCall Pattern = iota
	// Shared starts one deadline at the entry from the budget; each attempt
	// gets min(its timeout, time left), the callee is handed that deadline
	// and stops there, and nothing starts once the time is gone.
	Shared
	// Admission is Shared, and each attempt goes through the admission of
	// a budget.Op, one per caller and callee, run on virtual time with
	// BeginAt and EndAt: refused before it starts when the callee is
	// unlikely to finish in the time left by the Op's measurements, stalled
	// or failing, probed while refused. A call with a fallback keeps its
	// last rung's p99 in reserve.
	Admission
	// NoTimeout sets no timeout anywhere; only the user stops waiting.
	NoTimeout
)

// Patterns lists every pattern in report order.
var Patterns = []Pattern{PerCall, Shared, Admission, NoTimeout}

// Key returns the pattern's stable name in report.json.
func (p Pattern) Key() string {
	return [...]string{"per-call", "shared", "admission", "none"}[p]
}

// String returns the pattern's name in tables.
func (p Pattern) String() string {
	return [...]string{"per-call timeouts", "shared deadline", "deadline + admission", "no timeout"}[p]
}

func (p Pattern) budgetAware() bool { return p == Shared || p == Admission }

// Defaults of Config's zero fields.
const (
	// MaxRequests is the most requests a pattern may serve: each takes
	// about 30 bytes of results, per pattern.
	MaxRequests = 20_000_000
	// DefaultRequests is how many requests each pattern serves.
	DefaultRequests = 100_000
	// DefaultConcurrency is how many users the closed loop has.
	DefaultConcurrency = 100
	// DefaultWorkers is the pool size of a service that declares none, the
	// 200 threads of the classic cascade.
	DefaultWorkers = 200
	// GiveUpFactor times the budget is how long a user waits before giving
	// up on a request, as budget demo's load generator does. Only requests
	// that neither answer nor fail by then reach it.
	GiveUpFactor = 3
	// ThinkTime is how long a user of the closed loop waits between the end
	// of one request and the next. Without it, requests refused at once
	// would follow each other at one instant of virtual time.
	ThinkTime = int64(time.Millisecond)
)

// Config says what traffic to simulate.
type Config struct {
	// Requests is how many requests each pattern serves; 0 means
	// DefaultRequests.
	Requests int
	// Rate, when more than zero, sends requests at this many per second of
	// virtual time, with exponential gaps (an open loop, which can
	// overload the services). Zero means a closed loop of Concurrency
	// users, each sending its next request when the last one ended.
	Rate float64
	// Concurrency is the closed loop's number of users; 0 means
	// DefaultConcurrency. Unused when Rate is set.
	Concurrency int
	// Seed seeds the random draws; the same seed gives the same report.
	Seed uint64
	// Faults are injected into their services (and the services that name
	// them as host) for the whole run.
	Faults []Fault
	// Workers is the pool size of services that do not declare one; 0
	// means DefaultWorkers.
	Workers int
	// MaxCalls bounds the work of a run: Validate refuses, with a
	// *WorkError, a run whose patterns × requests × CallsPerRequest is
	// more. 0 means DefaultMaxCalls.
	MaxCalls int64
}

func (c Config) withDefaults() Config {
	if c.Requests == 0 {
		c.Requests = DefaultRequests
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.MaxCalls == 0 {
		c.MaxCalls = DefaultMaxCalls
	}
	return c
}

// Validate reports what is wrong with cfg for topology t, or nil.
func (c Config) Validate(t *topology.Topology) error {
	var errs []error
	if c.Requests < 0 || c.Requests > MaxRequests {
		errs = append(errs, fmt.Errorf("requests %d is outside [1, %d]", c.Requests, MaxRequests))
	}
	if c.Rate < 0 || c.Rate > 1e9 || c.Rate != c.Rate {
		errs = append(errs, fmt.Errorf("rate %g is outside (0, 1e9]", c.Rate))
	}
	if c.Concurrency < 0 || c.Concurrency > 1_000_000 {
		errs = append(errs, fmt.Errorf("concurrency %d is outside [1, 1000000]", c.Concurrency))
	}
	if c.Workers < 0 || c.Workers > topology.MaxWorkers {
		errs = append(errs, fmt.Errorf("workers %d is outside [1, %d]", c.Workers, topology.MaxWorkers))
	}
	seen := map[string]bool{}
	for _, f := range c.Faults {
		if _, ok := t.Services[f.Service]; !ok {
			errs = append(errs, fmt.Errorf("fault on unknown service %q", f.Service))
		}
		if seen[f.Service] {
			errs = append(errs, fmt.Errorf("two faults on %q", f.Service))
		}
		seen[f.Service] = true
	}
	if c.MaxCalls < 0 {
		errs = append(errs, fmt.Errorf("max calls %d is negative", c.MaxCalls))
	}
	if cyc, pos := t.Cycle(); cyc != nil {
		errs = append(errs, fmt.Errorf("line %d: calls form a cycle %s, which cannot be simulated", pos.Line, strings.Join(cyc, " -> ")))
	} else if len(errs) == 0 {
		if err := c.checkWork(t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run simulates t under every pattern and returns one result per pattern,
// in the order of Patterns. It returns an error when cfg is invalid for t or
// t has a cycle.
func Run(t *topology.Topology, cfg Config) ([]Result, error) {
	if err := cfg.Validate(t); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m := compile(t, cfg)
	// The patterns share nothing but the read-only model, so they run side
	// by side, one per CPU; each has its own random source, so the results
	// do not depend on how they were scheduled.
	out := make([]Result, len(Patterns))
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i, p := range Patterns {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			e := newEngine(m, cfg, p)
			e.run()
			out[i] = e.result()
		})
	}
	wg.Wait()
	return out, nil
}
