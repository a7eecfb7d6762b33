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

	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

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
		if err := f.check(); err != nil {
			errs = append(errs, fmt.Errorf("fault %s: %v", f, err))
		}
	}
	if c.Horizon < 0 || c.Horizon > topology.MaxDuration {
		errs = append(errs, fmt.Errorf("horizon %s is outside [0, %s]", c.Horizon, topology.MaxDuration))
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
