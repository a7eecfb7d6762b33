package dependency

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/timebudget/budget/budgettest"
	"github.com/timebudget/budget/cmd/budget/internal/scenario"
)

// ErrDependencyFailed is what a dependency with a "fail" fault returns.
var ErrDependencyFailed = errors.New("dependency failed")

// Dependency is one simulated downstream service, built on the project's
// shared fake, budgettest.Dependency: this type adds the demo's faults (a
// slowdown that starts at the same request in every pattern, a hang, a
// failure) and serves several paths from one engine. Every call is tracked by
// one budgettest.Probe, which measures the wasted work: for every call whose
// caller went away (its context was canceled, its connection closed, or its
// deadline passed) while the work was still running, the time from that
// moment until the work actually stopped.
//
// Whether work stops when its caller goes away depends on the dependency, as
// it does in real systems:
//
//   - A cascading dependency runs its work in the request's context: careful
//     Go code, a gRPC call, a query through a driver that sends a cancel. It
//     stops as soon as the caller goes away or the deadline passes.
//   - A non-cascading dependency hands the work to an engine that does not
//     see the request's cancellation (budgettest's Detached work): a worker
//     pool, a database without a statement timeout, a card processor. The
//     only thing that stops such work early is a deadline handed over with it
//     when it starts, which is what the budget headers make possible (the
//     same pushdown as statement_timeout).
type Dependency struct {
	// Name is the dependency's name in the scenario and the reports.
	Name    string
	Proto   scenario.Protocol // how the edge reaches it
	Base    time.Duration     // typical latency without a fault
	Cascade bool              // whether the work observes the caller's cancellation
	// Fault is what --fault injects into it.
	Fault   scenario.Fault
	traffic *Traffic // share of the run's requests sent so far, for slowdowns
	// probe measures the work done after the caller had gone.
	probe budgettest.Probe

	// mu guards engines.
	mu      sync.Mutex
	engines map[time.Duration]*budgettest.Dependency // one per typical latency served
}

// New returns a dependency whose calls take about base (its
// fault aside); t is the run's traffic, which a slowdown fault reads.
func New(name string, base time.Duration, cascade bool, f scenario.Fault, t *Traffic) *Dependency {
	return &Dependency{Name: name, Base: base, Cascade: cascade, Fault: f, traffic: t,
		engines: map[time.Duration]*budgettest.Dependency{}}
}

// engine returns the fake that does the work of calls whose typical latency
// is base, creating it on first use. All of a dependency's engines share its
// fault and its probe.
func (d *Dependency) engine(base time.Duration) *budgettest.Dependency {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.engines[base]; ok {
		return e
	}
	e := &budgettest.Dependency{
		Latency:  func() time.Duration { return d.Latency(base) },
		Detached: !d.Cascade,
		Probe:    &d.probe,
	}
	if d.Fault.Kind == scenario.FaultFail {
		e.Err = ErrDependencyFailed
	}
	d.engines[base] = e
	return e
}

// Latency returns how long the next call of typical latency base takes; a
// negative value means it never finishes on its own.
func (d *Dependency) Latency(base time.Duration) time.Duration {
	switch d.Fault.Kind {
	case scenario.FaultHang:
		return -1
	case scenario.FaultFail:
		return 0
	case scenario.FaultSlow:
		return d.Fault.D
	case scenario.FaultSlowdown:
		if d.traffic.share() >= d.Fault.After {
			return d.Fault.D
		}
	}
	// Normal latency: the base, give or take 20 %.
	return time.Duration(float64(base) * (0.8 + 0.4*rand.Float64()))
}

// serve does the work of one call of the dependency's typical latency.
func (d *Dependency) serve(ctx context.Context) error { return d.serveWork(ctx, d.Base) }

// serveWork does the work of one call whose typical latency is base. ctx
// carries the caller's cancellation and, when the caller sent one, its
// deadline.
func (d *Dependency) serveWork(ctx context.Context, base time.Duration) error {
	return d.engine(base).Call(ctx)
}

// Calls returns how many calls the dependency has served.
func (d *Dependency) Calls() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n int64
	for _, e := range d.engines {
		n += e.Calls()
	}
	return n
}

// Waste returns the work the dependency did after its callers had gone,
// summed over the calls, and how many calls did any.
func (d *Dependency) Waste() (total time.Duration, calls int64) {
	for _, r := range d.probe.Records() {
		if o := r.Orphaned(); o > 0 {
			total += o
			calls++
		}
	}
	return total, calls
}

// Close ends every call still working (hung ones included) and waits for
// them; the waste of calls ended this way is counted up to this moment.
func (d *Dependency) Close() {
	d.mu.Lock()
	engines := make([]*budgettest.Dependency, 0, len(d.engines))
	for _, e := range d.engines {
		engines = append(engines, e)
	}
	d.mu.Unlock()
	for _, e := range engines {
		e.Close()
	}
}

// Traffic tracks how much of a run's traffic has been sent, so a slowdown
// fault starts at the same request in every pattern.
type Traffic struct {
	// Sent counts the requests sent so far, of Total in the run.
	Sent  atomic.Int64
	Total int64
}

// share returns the part of the run's requests sent so far, in [0, 1].
func (t *Traffic) share() float64 {
	if t == nil || t.Total <= 0 {
		return 0
	}
	return float64(t.Sent.Load()) / float64(t.Total)
}
