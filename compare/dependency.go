package compare

import (
	"context"
	"sync"
	"time"

	"github.com/timebudget/budget/budgettest"
)

// dependency is the fake downstream service of a run: the project's shared
// fake, budgettest.Dependency, whose latency follows the scenario's phases.
// With cascade its work stops when the call's context ends; without it the
// work is Detached and ignores the call's context, going on to its full
// latency while the caller returns at once. A budgettest.Probe tracks each
// call against the context of the request it serves (CallFor), not the
// call's own context, which the common bug cuts off from the request, so the
// probe sees when the user left, whatever context the caller passed down.
type dependency struct {
	start   time.Time
	phases  []Phase
	cascade bool
	probe   budgettest.Probe
	fake    *budgettest.Dependency

	mu     sync.Mutex
	doomed time.Duration // worker time of calls whose answer reached nobody in time
}

func newDependency(start time.Time, phases []Phase, cascade bool) *dependency {
	d := &dependency{start: start, phases: phases, cascade: cascade}
	d.fake = &budgettest.Dependency{
		Latency:       func() time.Duration { return d.latency(time.Now()) },
		Detached:      !cascade,
		IgnoreContext: !cascade,
		Probe:         &d.probe,
	}
	return d
}

// latency returns the latency of a call starting at now.
func (d *dependency) latency(now time.Time) time.Duration {
	at := now.Sub(d.start)
	var lat time.Duration
	for _, p := range d.phases {
		if p.At > at {
			break
		}
		lat = p.Latency
	}
	return lat
}

// call makes one call within ctx on behalf of the request whose context is
// user, and counts its work as doomed when its answer reached nobody in
// time: the call failed, or the user had left by the time it returned.
func (d *dependency) call(ctx, user context.Context) error {
	start := time.Now()
	took := d.latency(start) // the detached work's time, whatever the caller does
	err := d.fake.CallFor(ctx, user)
	if d.cascade {
		took = time.Since(start)
	}
	if err != nil || user.Err() != nil {
		d.mu.Lock()
		d.doomed += took
		d.mu.Unlock()
	}
	return err
}

// totals returns the dependency's calls and worker time, from the probe's
// records: all of it (busy), the part after the user had left (orphans),
// and the doomed part. Call it once the probe has seen every call stop.
func (d *dependency) totals() (calls int, busy, orphans, doomed time.Duration) {
	for _, r := range d.probe.Records() {
		busy += r.Stop.Sub(r.Start)
		orphans += r.Orphaned()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return int(d.fake.Calls()), busy, orphans, d.doomed
}
