package budget

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// defaultDetachLimit bounds each piece of work a [Detacher] with a zero Limit
// runs.
const defaultDetachLimit = 30 * time.Second

// Detach returns a context for work that runs after the answer: an audit
// record, a cache write, metrics. Such work must not be canceled with the
// request (an answer computed and then lost because its audit write ran out
// of time is the worst outcome available), nor extend the request's deadline,
// so it gets its own bound: the returned context keeps parent's values (trace
// ids, the request's ledger and observer) through context.WithoutCancel, is
// not canceled when parent is, and has its own deadline d from now (d of zero
// or less gives a context that is already done, as with [Start]). It carries
// no reserve. The detachment is recorded as an [EventDetach] in the request's
// ledger, with the time parent had left as Remaining and the bound d as
// Needed.
//
// Prefer [Detacher.Go], which also runs the work and lets shutdown wait for
// it. Detach costs seven allocations (its state and three contexts).
//
// Canceling the returned context releases resources associated with it, so code
// should call cancel as soon as the operations running in it complete.
func Detach(parent context.Context, stage string, d time.Duration) (context.Context, context.CancelFunc) {
	r := read(parent)
	st := &state{stage: stage, start: r.now, total: max(d, 0)}
	if r.st != nil {
		st.ledger, st.observer = r.st.ledger, r.st.observer
	}
	emit(parent, r.st, nil, Event{Kind: EventDetach, Stage: stage, At: r.now, Remaining: r.remaining, Needed: st.total})
	ctx := context.WithValue(context.WithoutCancel(parent), stateKey{}, st)
	return context.WithDeadlineCause(ctx, r.now.Add(st.total), ErrExpired)
}

// Detacher runs work detached from requests (see [Detach]) and keeps track
// of it, so that a server can wait for it at shutdown and nothing is lost
// silently. Use one per server.
//
// The zero value is ready to use, with a Limit of 30 s. A Detacher must
// not be copied after first use. It is safe for concurrent use. A nil
// *Detacher runs nothing: Go returns an error matching [ErrMisconfigured],
// Wait returns nil and the counts are zero.
type Detacher struct {
	// Limit bounds each piece of work. Zero means 30 s.
	Limit time.Duration

	mu      sync.Mutex
	running int
	idle    chan struct{} // closed when running drops to zero
	failed  atomic.Int64
}

// Go runs fn in a new goroutine with a context from [Detach] (parent's values,
// not its cancellation, a deadline of Limit). When fn returns, its duration
// and outcome are recorded in the request's ledger as an [EventAttempt] named
// stage, and an error is counted (see [Detacher.Failed]); the request's
// observer sees both. Go costs one goroutine and what Detach costs.
//
// A nil fn is a programming mistake reported, like every misconfigured call
// of this package, by an error matching [ErrMisconfigured]: nothing runs and
// nothing is counted.
func (g *Detacher) Go(parent context.Context, stage string, fn func(ctx context.Context) error) error {
	if g == nil || fn == nil {
		return misconfigured("Detacher.Go needs a Detacher and a function")
	}
	limit := g.Limit
	if limit <= 0 {
		limit = defaultDetachLimit
	}
	ctx, cancel := Detach(parent, stage, limit)
	g.add()
	go func() {
		defer g.done()
		defer cancel()
		start := time.Now()
		err := fn(ctx)
		outcome := classify(ctx, err, nil)
		if err != nil {
			g.failed.Add(1)
		}
		emit(ctx, stateOf(ctx), nil, Event{Kind: EventAttempt, Stage: stage, At: start,
			Duration: time.Since(start), Remaining: limit, Outcome: outcome, Err: err})
	}()
	return nil
}

// add counts one more piece of work running; done counts it finished.
func (g *Detacher) add() {
	g.mu.Lock()
	if g.running == 0 {
		g.idle = make(chan struct{})
	}
	g.running++
	g.mu.Unlock()
}

func (g *Detacher) done() {
	g.mu.Lock()
	g.running--
	if g.running == 0 {
		close(g.idle)
	}
	g.mu.Unlock()
}

// Wait waits until no detached work is running, or until ctx is done; call it
// at shutdown, after the server has stopped taking requests. It returns nil
// when everything finished, and otherwise an error that says how much work
// was still running and matches ctx's error (context.DeadlineExceeded when a
// shutdown deadline passed).
func (g *Detacher) Wait(ctx context.Context) error {
	if g == nil {
		return nil // a nil Detacher runs nothing (its Go refuses)
	}
	g.mu.Lock()
	if g.running == 0 {
		g.mu.Unlock()
		return nil
	}
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("budget: %d detached tasks still running: %w", g.Running(), context.Cause(ctx))
	}
}

// Running returns how many detached tasks are running.
func (g *Detacher) Running() int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running
}

// Failed returns how many detached tasks have returned an error.
func (g *Detacher) Failed() int64 {
	if g == nil {
		return 0
	}
	return g.failed.Load()
}
