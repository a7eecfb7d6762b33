package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// errDependencyFailed is what a dependency with a "fail" fault returns.
var errDependencyFailed = errors.New("dependency failed")

// dependency is one simulated downstream service. Each call runs a job that
// takes the dependency's latency (or its fault's). The dependency measures its
// own wasted work: for every call whose caller went away (its context was
// canceled, its connection closed, or its deadline passed) while the job was
// still running, the time from that moment until the job actually stopped.
//
// Whether a job stops when its caller goes away depends on the dependency, as
// it does in real systems:
//
//   - A cascading dependency runs its job in the request's context: careful Go
//     code, a gRPC call, a query through a driver that sends a cancel. It
//     stops as soon as the caller goes away or the deadline passes.
//   - A non-cascading dependency hands the job to an engine that does not see
//     the request's cancellation: a worker pool, a database without a
//     statement timeout, a card processor. The only thing that stops such a
//     job early is a deadline handed over with it when it starts, which is what
//     the budget headers make possible (the same pushdown as
//     statement_timeout).
type dependency struct {
	name    string
	proto   protocol      // how the edge reaches it
	base    time.Duration // typical latency without a fault
	cascade bool          // whether the job observes the caller's cancellation
	fault   fault
	traffic *traffic // share of the run's requests sent so far, for slowdowns

	stop  chan struct{} // closed when the service shuts down; ends hung jobs
	jobs  sync.WaitGroup
	calls atomic.Int64
	waste wasteMeter
}

func newDependency(name string, base time.Duration, cascade bool, f fault, t *traffic) *dependency {
	return &dependency{name: name, base: base, cascade: cascade, fault: f, traffic: t, stop: make(chan struct{})}
}

// latency returns how long the next job of typical latency base takes; a
// negative value means it never finishes on its own.
func (d *dependency) latency(base time.Duration) time.Duration {
	switch d.fault.kind {
	case faultHang:
		return -1
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
	d.calls.Add(1)
	if d.fault.kind == faultFail {
		return errDependencyFailed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	lat := d.latency(base)
	jobCtx, cancel := ctx, context.CancelFunc(func() {})
	if !d.cascade {
		// The engine never sees the request's cancellation, only a deadline
		// handed over at the start.
		jobCtx = context.WithoutCancel(ctx)
		if dl, ok := ctx.Deadline(); ok {
			jobCtx, cancel = context.WithDeadline(jobCtx, dl)
		}
	}
	c := &job{done: make(chan struct{})}
	d.jobs.Add(1)
	go func() {
		defer d.jobs.Done()
		defer cancel()
		var timeout <-chan time.Time
		if lat >= 0 {
			t := time.NewTimer(lat)
			defer t.Stop()
			timeout = t.C
		}
		var err error
		select {
		case <-timeout:
		case <-jobCtx.Done():
			err = jobCtx.Err()
		case <-d.stop:
			err = errStopped
		}
		c.finish(&d.waste, err)
	}()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		c.callerGone(&d.waste)
		return ctx.Err()
	}
}

var errStopped = errors.New("service stopped")

// close ends every job still running (hung ones included) and waits for them.
// Waste of jobs ended this way is counted up to this moment.
func (d *dependency) close() {
	close(d.stop)
	d.jobs.Wait()
}

// job is one call's work; it pairs the moment the caller went away with the
// moment the work stopped, whichever is known last.
type job struct {
	mu      sync.Mutex
	done    chan struct{}
	err     error
	ended   time.Time
	goneAt  time.Time
	settled bool
}

func (j *job) finish(w *wasteMeter, err error) {
	now := time.Now()
	j.mu.Lock()
	j.err, j.ended = err, now
	close(j.done)
	j.settleLocked(w)
	j.mu.Unlock()
}

func (j *job) callerGone(w *wasteMeter) {
	now := time.Now()
	j.mu.Lock()
	j.goneAt = now
	j.settleLocked(w)
	j.mu.Unlock()
}

func (j *job) settleLocked(w *wasteMeter) {
	if j.settled || j.ended.IsZero() || j.goneAt.IsZero() {
		return
	}
	j.settled = true
	if d := j.ended.Sub(j.goneAt); d > 0 {
		w.add(d)
	}
}

// wasteMeter adds up work done after the caller went away.
type wasteMeter struct {
	total atomic.Int64 // nanoseconds
	calls atomic.Int64 // calls that kept working after their caller left
}

func (w *wasteMeter) add(d time.Duration) {
	w.total.Add(int64(d))
	w.calls.Add(1)
}

// traffic tracks how much of a run's traffic has been sent, so a slowdown
// fault starts at the same request in every pattern.
type traffic struct {
	sent  atomic.Int64
	total int64
}

func (t *traffic) share() float64 {
	if t == nil || t.total <= 0 {
		return 0
	}
	return float64(t.sent.Load()) / float64(t.total)
}
