package budgettest

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"
)

// Probe records, for each piece of work it tracks, when the work started,
// when its caller gave up and when the work stopped. The zero value is ready
// to use. A Probe is safe for concurrent use; it keeps every record, so use
// one per test. A nil *Probe tracks nothing: its methods report no records
// and no running work, and Track's stop still returns the work's record.
type Probe struct {
	mu      sync.Mutex
	records []Record
	running int
	idle    chan struct{} // closed while running is zero; nil means closed
}

// Record is what a [Probe] measured of one piece of work. Times are read from
// the local clock, with its monotonic reading, so differences between them
// are exact within the process.
type Record struct {
	// Start is when the work began ([Probe.Track] was called).
	Start time.Time
	// Deadline is the deadline of the work's context; zero when it had none.
	Deadline time.Time
	// GaveUp is when the caller gave up: the moment the work's context was
	// done, or its deadline when that had passed by then (a context whose
	// timer fires late, or that a cancellation from the caller ends just
	// after its deadline, still ended at the deadline for the caller). So
	// scheduling delays count against the work, not for it. It is zero when
	// the work stopped first.
	GaveUp time.Time
	// Stop is when the work stopped (the stop function was called).
	Stop time.Time
}

// Orphaned returns how long the work kept running after its caller gave up,
// or zero when the work stopped first.
func (r Record) Orphaned() time.Duration {
	if r.GaveUp.IsZero() || r.Stop.Before(r.GaveUp) {
		return 0
	}
	return r.Stop.Sub(r.GaveUp)
}

// PastDeadline returns how long after its context's deadline the work
// stopped (negative when it stopped before), and false when the context had
// no deadline.
func (r Record) PastDeadline() (time.Duration, bool) {
	if r.Deadline.IsZero() {
		return 0, false
	}
	return r.Stop.Sub(r.Deadline), true
}

// Track starts measuring one piece of work done for the caller of ctx, and
// returns the function to call when the work stops; call it exactly once,
// typically deferred. stop returns the work's record, for code that reports
// it per request; calling it again returns the same record and records
// nothing more. A nil ctx is a caller that never gives up, as
// context.Background. Track costs a context.AfterFunc registration and three
// allocations.
func (p *Probe) Track(ctx context.Context) (stop func() Record) {
	if ctx == nil {
		ctx = context.Background()
	}
	t := &tracked{ctx: ctx, rec: Record{Start: time.Now()}}
	t.rec.Deadline, _ = ctx.Deadline()
	t.release = context.AfterFunc(ctx, t.gaveUp)
	if p == nil {
		return func() Record { rec, _ := t.finish(time.Now()); return rec }
	}
	p.mu.Lock()
	if p.running == 0 {
		p.idle = make(chan struct{})
	}
	p.running++
	p.mu.Unlock()
	return func() Record { return p.stop(t) }
}

// tracked is one piece of work being measured.
type tracked struct {
	ctx     context.Context
	release func() bool
	mu      sync.Mutex
	rec     Record
	stopped bool
}

// gaveUp runs when the work's context is done.
func (t *tracked) gaveUp() {
	at := t.doneAt(time.Now())
	t.mu.Lock()
	if !t.stopped {
		t.rec.GaveUp = at
	}
	t.mu.Unlock()
}

// doneAt returns when the caller of a context found done at now gave up: at
// the context's deadline when that had passed, else now.
func (t *tracked) doneAt(now time.Time) time.Time {
	if !t.rec.Deadline.IsZero() && t.rec.Deadline.Before(now) {
		return t.rec.Deadline
	}
	return now
}

// finish stops the work's clock at now, the first time it is called, and
// returns its record and whether this call was the first.
func (t *tracked) finish(now time.Time) (Record, bool) {
	t.release()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return t.rec, false
	}
	t.stopped = true
	t.rec.Stop = now
	if t.rec.GaveUp.IsZero() && t.ctx.Err() != nil {
		// The context was done before the work stopped, but its AfterFunc
		// had not run yet.
		t.rec.GaveUp = t.doneAt(now)
	}
	return t.rec, true
}

func (p *Probe) stop(t *tracked) Record {
	rec, first := t.finish(time.Now())
	if !first {
		return rec // a second stop: counted once already
	}
	p.mu.Lock()
	p.records = append(p.records, rec)
	p.running--
	if p.running == 0 {
		close(p.idle)
		p.idle = nil
	}
	p.mu.Unlock()
	return rec
}

// Records returns a copy of the records of the work that has stopped, in the
// order it stopped.
func (p *Probe) Records() []Record {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Record(nil), p.records...)
}

// Orphaned returns, for each piece of stopped work whose caller gave up
// first, how long it kept running after that ([Record.Orphaned]), in the
// order the work stopped.
func (p *Probe) Orphaned() []time.Duration {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []time.Duration
	for _, r := range p.records {
		if !r.GaveUp.IsZero() {
			out = append(out, r.Orphaned())
		}
	}
	return out
}

// Running returns how many tracked pieces of work have not stopped yet.
func (p *Probe) Running() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// Wait blocks until no tracked work is running, or ctx is done, in which case
// it returns ctx's error. Work tracked while Wait blocks is waited for too.
// A nil ctx waits as long as it takes, as context.Background.
func (p *Probe) Wait(ctx context.Context) error {
	if p == nil {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		p.mu.Lock()
		idle := p.idle
		p.mu.Unlock()
		if idle == nil {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Quantile returns the q-quantile of samples by the nearest-rank method: the
// smallest sample that at least a fraction q of the samples do not exceed. q
// is clamped to [0, 1]; Quantile(s, 1) is the largest sample. It returns zero
// for no samples, and does not modify samples.
func Quantile(samples []time.Duration, q float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	q = min(max(q, 0), 1)
	rank := int(math.Ceil(q * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}
