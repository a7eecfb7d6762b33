package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/timebudget/budget/budgettest"
)

// errDependencyFailed is what a dependency with a "fail" fault returns.
var errDependencyFailed = errors.New("dependency failed")

// dependency is one simulated downstream service, built on the project's
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
type dependency struct {
	name    string
	proto   protocol      // how the edge reaches it
	base    time.Duration // typical latency without a fault
	cascade bool          // whether the work observes the caller's cancellation
	fault   fault
	traffic *traffic // share of the run's requests sent so far, for slowdowns
	probe   budgettest.Probe

	mu      sync.Mutex
	engines map[time.Duration]*budgettest.Dependency // one per typical latency served
}

// newDependency returns a dependency whose calls take about base (its
// fault aside); t is the run's traffic, which a slowdown fault reads.
func newDependency(name string, base time.Duration, cascade bool, f fault, t *traffic) *dependency {
	return &dependency{name: name, base: base, cascade: cascade, fault: f, traffic: t,
		engines: map[time.Duration]*budgettest.Dependency{}}
}

// engine returns the fake that does the work of calls whose typical latency
// is base, creating it on first use. All of a dependency's engines share its
// fault and its probe.
func (d *dependency) engine(base time.Duration) *budgettest.Dependency {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.engines[base]; ok {
		return e
	}
	e := &budgettest.Dependency{
		Latency:  func() time.Duration { return d.latency(base) },
		Detached: !d.cascade,
		Probe:    &d.probe,
	}
	if d.fault.kind == faultFail {
		e.Err = errDependencyFailed
	}
	d.engines[base] = e
	return e
}

// latency returns how long the next call of typical latency base takes; a
// negative value means it never finishes on its own.
func (d *dependency) latency(base time.Duration) time.Duration {
	switch d.fault.kind {
	case faultHang:
		return -1
	case faultFail:
		return 0
	case faultSlow:
		return d.fault.d
	case faultSlowdown:
		if d.traffic.share() >= d.fault.after {
			return d.fault.d
		}
	}
	// Normal latency: the base, give or take 20 %.
	return time.Duration(float64(base) * (0.8 + 0.4*rand.Float64()))
}

// serve does the work of one call of the dependency's typical latency.
func (d *dependency) serve(ctx context.Context) error { return d.serveWork(ctx, d.base) }

// serveWork does the work of one call whose typical latency is base. ctx
// carries the caller's cancellation and, when the caller sent one, its
// deadline.
func (d *dependency) serveWork(ctx context.Context, base time.Duration) error {
	return d.engine(base).Call(ctx)
}

// calls returns how many calls the dependency has served.
func (d *dependency) calls() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n int64
	for _, e := range d.engines {
		n += e.Calls()
	}
	return n
}

// waste returns the work the dependency did after its callers had gone,
// summed over the calls, and how many calls did any.
func (d *dependency) waste() (total time.Duration, calls int64) {
	for _, r := range d.probe.Records() {
		if o := r.Orphaned(); o > 0 {
			total += o
			calls++
		}
	}
	return total, calls
}

// close ends every call still working (hung ones included) and waits for
// them; the waste of calls ended this way is counted up to this moment.
func (d *dependency) close() {
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

// traffic tracks how much of a run's traffic has been sent, so a slowdown
// fault starts at the same request in every pattern.
type traffic struct {
	sent  atomic.Int64
	total int64
}

// share returns the part of the run's requests sent so far, in [0, 1].
func (t *traffic) share() float64 {
	if t == nil || t.total <= 0 {
		return 0
	}
	return float64(t.sent.Load()) / float64(t.total)
}
