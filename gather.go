package budget

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Branch is one concurrent part of a [Gather].
type Branch[T any] struct {
	// Name identifies the branch in the result, in errors and in the ledger.
	Name string
	// Optional marks a branch the answer can do without: when it fails or
	// is late, the result is marked incomplete instead of failing. A branch
	// that is not optional is required: its failure fails the whole call and
	// cancels its siblings at once.
	Optional bool
	// Fn computes the branch's part; it must not be nil. It runs in its own
	// goroutine with a context whose deadline is the call's bound (shared
	// with every sibling, never a fresh one) and which is canceled when the
	// call returns, so it must honour cancellation.
	Fn func(ctx context.Context) (T, error)
}

// BranchResult is what one branch of a [Gather] delivered.
type BranchResult[T any] struct {
	// Name is the branch's name.
	Name string
	// Outcome says whether the branch delivered ([OutcomeOK]) and if not,
	// why not: [OutcomeFailed] when it returned an error of its own,
	// [OutcomeExpired] when it was still running at the bound (a straggler,
	// canceled, or never started because the bound passed before it got a
	// concurrency slot), [OutcomeCanceled] when a required sibling failed or
	// the caller gave up while it ran or waited for a slot. Err tells a
	// branch that ran from one that never started: the latter has Duration
	// zero.
	Outcome Outcome
	// Value is what the branch returned; the zero T unless Outcome is
	// OutcomeOK.
	Value T
	// Err is the branch's error, or for a branch that did not finish the
	// reason: an error matching [context.DeadlineExceeded] when the bound
	// passed, the caller's context error when it gave up.
	Err error
	// Duration is how long the branch ran, up to the moment the call
	// stopped waiting for it.
	Duration time.Duration

	begun time.Time
}

// GatherResult is what a [Gather] collected by its bound.
type GatherResult[T any] struct {
	// Branches holds one result per branch, in the order of
	// Gather.Branches.
	Branches []BranchResult[T]
	// Incomplete reports that at least one optional branch did not deliver.
	Incomplete bool
	// Stragglers counts the branches still running when the call stopped
	// waiting; they were canceled then.
	Stragglers int
}

// Gather is a fan-out: its branches run concurrently and share the caller's
// deadline, less a combine reserve that leaves the caller time to put their
// answers together. The call returns by that bound with whatever has arrived:
// an answer marked incomplete when an optional branch is missing, or an
// error when a required one is. Branches still running are canceled and
// counted; a required branch that fails cancels its siblings at once.
//
// An optional Limit bounds how many branches run at once. Unlike errgroup
// with SetLimit or conc pools, waiting for a slot is bounded by the same
// deadline: a branch that gets no slot before the bound is not started, and
// the call still returns on time.
//
// No goroutine outlives the call's return by more than the time its Fn takes
// to notice that its context was canceled: the call does not wait for
// stragglers, and their goroutines exit without blocking once Fn returns.
//
// The zero value has no branches and returns at once. A Gather holds
// configuration only and is safe for concurrent use as long as its fields are
// not changed. Do on a nil *Gather returns an error matching
// [ErrMisconfigured].
type Gather[T any] struct {
	// Stage names the fan-out in errors. Empty means "gather".
	Stage string
	// Branches run concurrently, each in its own goroutine.
	Branches []Branch[T]
	// Reserve is the combine reserve: the call returns, and the branches'
	// contexts end, at the deadline less ctx's reserve (see [WithReserve])
	// less Reserve. Zero holds back nothing beyond ctx's reserve.
	Reserve time.Duration
	// Limit bounds the branches running at once; zero or less means no
	// limit.
	Limit int
}

// gathering is what the branches of one call share: they record their
// results under mu until the call stops waiting, so the call itself wakes
// once, not once per branch.
type gathering struct {
	mu      sync.Mutex
	closed  bool          // the call stopped waiting: results are frozen
	pending int           // branches that have not returned
	fatal   error         // the failure of a required branch
	done    chan struct{} // closed when every branch returned, or one failed the call
}

// errGatherReturned is the cause of a branch context canceled because the
// call returned.
var errGatherReturned = errors.New("budget: gather returned")

// Do runs the branches and returns what arrived by the bound (see [Gather]).
// The error is nil when every required branch delivered; otherwise it is the
// failure of the first required branch that failed (wrapped, so errors.Is and
// errors.As reach it), an [*Error] matching [context.DeadlineExceeded] naming
// the first required branch still missing at the bound, or the caller's
// context error when it gave up. Branches the bound cut off are recorded in
// the ledger as an [EventAttempt] with [OutcomeExpired], and branches never
// started as an [EventRefuse].
//
// Do costs one goroutine per branch, one context, one channel and the
// result slice: for eight trivial branches, about twice what plain
// goroutines with a sync.WaitGroup cost (see BenchmarkGather8).
func (g *Gather[T]) Do(ctx context.Context) (GatherResult[T], error) {
	if g == nil {
		return GatherResult[T]{}, misconfigured("Do on a nil *Gather")
	}
	n := len(g.Branches)
	res := GatherResult[T]{Branches: make([]BranchResult[T], n)}
	for i := range g.Branches {
		res.Branches[i].Name = g.Branches[i].Name
		if g.Branches[i].Fn == nil {
			return res, misconfigured("gather branch " + strconv.Quote(g.Branches[i].Name) + " has no Fn")
		}
	}
	st := stateOf(ctx)
	bctx, stop := g.branchContext(ctx, st)
	defer stop(errGatherReturned)
	s := &gathering{pending: n, done: make(chan struct{})}
	if n == 0 {
		close(s.done)
	}
	g.launchAll(bctx, s, &res)
	select {
	case <-s.done:
	case <-bctx.Done():
	}
	s.mu.Lock()
	s.closed = true
	fatal := s.fatal
	s.mu.Unlock()
	if fatal != nil {
		stop(fatal) // cancel the siblings
	}
	return g.finish(ctx, st, &res, fatal, bctx)
}

// branchContext returns the one context all branches share, and the function
// that ends it. It ends by the bound when ctx has a deadline (a required
// failure then ends it plainly, and the result says which branch failed), and
// with a cause otherwise. The branches see no reserve: it is already out of
// their deadline.
func (g *Gather[T]) branchContext(ctx context.Context, st *state) (context.Context, func(error)) {
	var bctx context.Context
	var stop func(error)
	if dl, ok := ctx.Deadline(); ok {
		c, cancel := context.WithDeadlineCause(ctx, dl.Add(-st.reserveOrZero()-g.Reserve), ErrExpired)
		bctx, stop = c, func(error) { cancel() }
	} else {
		c, cancel := context.WithCancelCause(ctx)
		bctx, stop = c, cancel
	}
	if st.reserveOrZero() > 0 {
		cp := *st
		cp.reserve, cp.fallback = 0, 0
		bctx = context.WithValue(bctx, stateKey{}, &cp)
	}
	return bctx, stop
}

// launchAll starts the branches, at most Limit at a time. Waiting for a slot
// ends when every started branch has returned, one failed the call, or the
// bound passed: branches left then are never started.
func (g *Gather[T]) launchAll(bctx context.Context, s *gathering, res *GatherResult[T]) {
	n := len(g.Branches)
	var slots chan struct{}
	if g.Limit > 0 && g.Limit < n {
		slots = make(chan struct{}, g.Limit)
	}
	stage := g.stage()
	launch := func(i int) {
		res.Branches[i].begun = time.Now()
		b := g.Branches[i] // the goroutine may outlive the call: it reads nothing of g
		go func() {
			v, err := b.Fn(bctx)
			if slots != nil {
				<-slots
			}
			s.mu.Lock()
			if !s.closed {
				arrive(s, &res.Branches[i], b.Optional, stage, v, err, bctx)
			}
			s.mu.Unlock()
		}()
	}
	if bctx.Err() != nil { // nothing left to start branches with
		return
	}
	for i := range n {
		if slots == nil {
			launch(i)
			continue
		}
		select {
		case slots <- struct{}{}:
			launch(i)
		case <-s.done:
			return
		case <-bctx.Done():
			return
		}
	}
}

// arrive records a branch's return, under s.mu. A required branch that failed
// on its own fails the call.
func arrive[T any](s *gathering, r *BranchResult[T], optional bool, stage string, v T, err error, bctx context.Context) {
	r.Duration = time.Since(r.begun)
	r.Err = err
	switch {
	case err == nil:
		r.Outcome, r.Value = OutcomeOK, v
	case bctx.Err() != nil: // it ended because the call's context did
		r.Outcome = endedOutcome(bctx, nil)
	default:
		r.Outcome = OutcomeFailed
		if !optional {
			s.fatal = fmt.Errorf("budget: %s: branch %s failed: %w", stage, r.Name, err)
			s.closed = true
			close(s.done)
			return
		}
	}
	if s.pending--; s.pending == 0 {
		s.closed = true
		close(s.done)
	}
}

// finish classifies the branches that did not return and builds the result.
// A straggler is recorded as an attempt that expired (or was canceled), and a
// branch never started as a refusal.
func (g *Gather[T]) finish(ctx context.Context, st *state, res *GatherResult[T], fatal error, bctx context.Context) (GatherResult[T], error) {
	r := read(ctx)
	var missing error
	for i := range res.Branches {
		b := &res.Branches[i]
		switch {
		case b.Outcome == OutcomeOK:
			continue
		case b.Outcome == OutcomeFailed: // a required one is the fatal error
		case b.begun.IsZero():
			b.Err = context.Cause(bctx)
			b.Outcome = endedOutcome(bctx, fatal)
			emit(ctx, st, nil, Event{Kind: EventRefuse, Stage: b.Name, At: r.now, Remaining: r.remaining, Outcome: b.Outcome})
		default:
			if b.Outcome == OutcomeNone { // started and still running: canceled on return
				b.Outcome, b.Err = endedOutcome(bctx, fatal), context.Cause(bctx)
				b.Duration = r.now.Sub(b.begun)
			}
			// A straggler, whether it returned as the call's context ended
			// or was still running.
			res.Stragglers++
			emit(ctx, st, nil, Event{Kind: EventAttempt, Stage: b.Name, At: b.begun, Duration: b.Duration,
				Remaining: r.remaining + b.Duration, Outcome: b.Outcome, Err: b.Err})
		}
		if g.Branches[i].Optional {
			res.Incomplete = true
		} else if missing == nil && b.Outcome != OutcomeFailed {
			missing = b.Err
			if errors.Is(b.Err, context.DeadlineExceeded) {
				missing = &Error{Stage: b.Name, Outcome: OutcomeExpired, Remaining: r.remaining, Available: r.available, Budget: st.budget(), Err: b.Err}
			}
		}
	}
	if fatal != nil {
		return *res, fatal
	}
	return *res, missing
}

// endedOutcome tells a branch ended by the bound from one canceled.
func endedOutcome(bctx context.Context, fatal error) Outcome {
	if fatal == nil && errors.Is(context.Cause(bctx), context.DeadlineExceeded) {
		return OutcomeExpired
	}
	return OutcomeCanceled
}

func (g *Gather[T]) stage() string {
	if g.Stage == "" {
		return "gather"
	}
	return g.Stage
}
