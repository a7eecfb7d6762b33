package compare

import (
	"context"
	"sync"
	"time"

	"github.com/timebudget/budget/budgettest"
)

// dependency is the fake downstream service of a run. It measures its own
// work: a budgettest.Probe tracks each call against the context of the
// request it serves (not the call's own context, which the common bug cuts
// off from the request), so the probe sees when the user left, whatever
// context the caller passed down.
type dependency struct {
	start   time.Time
	phases  []Phase
	cascade bool
	probe   budgettest.Probe

	mu      sync.Mutex
	calls   int
	busy    time.Duration // worker time over all calls
	doomed  time.Duration // worker time of calls whose answer reached nobody in time
	orphans time.Duration // worker time after the requesting user had left
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
// user. With cascade the work stops when ctx ends; without it the work goes
// on to its full latency while the caller returns at once.
func (d *dependency) call(ctx, user context.Context) error {
	lat := d.latency(time.Now())
	stop := d.probe.Track(user)
	if d.cascade {
		err := work(ctx, lat)
		d.account(stop(), err == nil && user.Err() == nil)
		return err
	}
	// The handoff decides, under one lock, whether the answer reached the
	// caller or the caller had gone first, so usefulness is never guessed.
	h := &handoff{answered: make(chan struct{})}
	go func() {
		t := time.NewTimer(lat)
		<-t.C
		h.mu.Lock()
		delivered := !h.gone
		h.delivered = delivered
		h.mu.Unlock()
		// Read and stop before the answer is handed over: once it is, the
		// request may end and cancel its context.
		useful := delivered && user.Err() == nil
		rec := stop()
		if delivered {
			close(h.answered)
		}
		d.account(rec, useful)
	}()
	select {
	case <-h.answered:
		return nil
	case <-ctx.Done():
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.delivered {
			return nil
		}
		h.gone = true
		return ctx.Err()
	}
}

// handoff passes one answer from work that ignores cancellation to a caller
// that may have left.
type handoff struct {
	mu        sync.Mutex
	answered  chan struct{} // closed when the answer is delivered
	delivered bool
	gone      bool // the caller returned without the answer
}

// account adds one finished piece of work to the totals; useful reports
// whether its answer reached a user still waiting.
func (d *dependency) account(rec budgettest.Record, useful bool) {
	took := rec.Stop.Sub(rec.Start)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	d.busy += took
	d.orphans += rec.Orphaned()
	if !useful {
		d.doomed += took
	}
}
