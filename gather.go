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

// BranchStatus says what became of one branch of a [Gather].
type BranchStatus uint8

// What can become of a branch.
const (
	BranchNotStarted BranchStatus = iota // never started: no concurrency slot before the bound, or the call ended first
	BranchDone                           // returned a value
	BranchFailed                         // returned an error of its own
	BranchTimedOut                       // still running when the bound passed: a straggler, canceled
	BranchCanceled                       // still running when a required sibling failed or the caller gave up: canceled
)

var branchStatusNames = [...]string{"not started", "done", "failed", "timed out", "canceled"}

// String returns the status in words, such as "timed out".
func (s BranchStatus) String() string {
	if int(s) < len(branchStatusNames) {
		return branchStatusNames[s]
	}
	return "branch status(" + strconv.Itoa(int(s)) + ")"
}

// BranchResult is what one branch of a [Gather] delivered.
type BranchResult[T any] struct {
	// Name is the branch's name.
	Name string
	// Status says whether the branch delivered, and if not, why not.
	Status BranchStatus
	// Value is what the branch returned; the zero T unless Status is
	// BranchDone.
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
// not changed.
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
// the ledger as [EventExpiry], and branches never started as [EventSkip].
//
// Do costs one goroutine per branch, one context, one channel and the
// result slice: for eight trivial branches, about twice what plain
// goroutines with a sync.WaitGroup cost (see BenchmarkGather8).
func (g *Gather[T]) Do(ctx context.Context) (GatherResult[T], error) {
	st := stateOf(ctx)
	n := len(g.Branches)
	res := GatherResult[T]{Branches: make([]BranchResult[T], n)}
	for i := range g.Branches {
		res.Branches[i].Name = g.Branches[i].Name
		if g.Branches[i].Fn == nil {
			return res, misconfigured("gather branch " + strconv.Quote(g.Branches[i].Name) + " has no Fn")
		}
	}
	// One context for all branches: canceled with a cause when there is no
	// deadline, by the bound otherwise (a required failure then cancels it
	// plainly, and the result says which branch failed).
	var bctx context.Context
	var cancel context.CancelFunc
	var cancelCause context.CancelCauseFunc
	if dl, ok := ctx.Deadline(); ok {
		bctx, cancel = context.WithDeadlineCause(ctx, dl.Add(-st.reserveOrZero()-g.Reserve), ErrBudgetExpired)
		defer cancel()
	} else {
		bctx, cancelCause = context.WithCancelCause(ctx)
		defer cancelCause(errGatherReturned)
	}
	stop := func(err error) {
		if cancel != nil {
			cancel()
		} else {
			cancelCause(err)
		}
	}
	if st.reserveOrZero() > 0 {
		// The reserve is already out of the branches' deadline.
		cp := *st
		cp.reserve = 0
		bctx = context.WithValue(bctx, stateKey{}, &cp)
	}
	s := &gathering{pending: n, done: make(chan struct{})}
	if n == 0 {
		close(s.done)
	}
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
	next := 0
	if bctx.Err() != nil { // nothing left to start branches with
		next = n
	}
	if slots == nil {
		for ; next < n; next++ {
			launch(next)
		}
	}
start:
	for next < n {
		select {
		case slots <- struct{}{}:
			launch(next)
			next++
		case <-s.done:
			break start
		case <-bctx.Done():
			break start
		}
	}
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

// arrive records a branch's return, under s.mu. A required branch that failed
// on its own fails the call.
func arrive[T any](s *gathering, r *BranchResult[T], optional bool, stage string, v T, err error, bctx context.Context) {
	r.Duration = time.Since(r.begun)
	r.Err = err
	switch {
	case err == nil:
		r.Status, r.Value = BranchDone, v
	case bctx.Err() != nil: // it ended because the call's context did
		r.Status = endedStatus(bctx, nil)
	default:
		r.Status = BranchFailed
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
func (g *Gather[T]) finish(ctx context.Context, st *state, res *GatherResult[T], fatal error, bctx context.Context) (GatherResult[T], error) {
	now := time.Now()
	remaining := time.Duration(0)
	if dl, ok := ctx.Deadline(); ok {
		remaining = dl.Sub(now)
	}
	var missing error
	for i := range res.Branches {
		r := &res.Branches[i]
		switch {
		case r.Status == BranchDone:
			continue
		case r.Status == BranchFailed: // a required one is the fatal error
		case r.begun.IsZero():
			r.Err = context.Cause(bctx)
			emit(ctx, st, nil, Event{Kind: EventSkip, Stage: r.Name, At: now, Remaining: remaining, Outcome: "not started"})
		case r.Status == BranchNotStarted: // started and still running: a straggler, canceled on return
			r.Status, r.Err = endedStatus(bctx, fatal), context.Cause(bctx)
			r.Duration = now.Sub(r.begun)
		}
		if r.Status == BranchTimedOut || r.Status == BranchCanceled {
			res.Stragglers++
		}
		if r.Status == BranchTimedOut {
			emit(ctx, st, nil, Event{Kind: EventExpiry, Stage: r.Name, At: r.begun, Duration: r.Duration,
				Remaining: remaining, Outcome: "straggler"})
		}
		if g.Branches[i].Optional {
			res.Incomplete = true
		} else if missing == nil && r.Status != BranchFailed {
			missing = r.Err
			if errors.Is(r.Err, context.DeadlineExceeded) {
				missing = &Error{Stage: r.Name, Kind: Expired, Remaining: remaining - st.reserveOrZero(),
					Budget: st.budget(), Err: r.Err}
			}
		}
	}
	if fatal != nil {
		return *res, fatal
	}
	return *res, missing
}

// endedStatus tells a branch ended by the bound from one canceled.
func endedStatus(bctx context.Context, fatal error) BranchStatus {
	if fatal == nil && errors.Is(context.Cause(bctx), context.DeadlineExceeded) {
		return BranchTimedOut
	}
	return BranchCanceled
}

func (g *Gather[T]) stage() string {
	if g.Stage == "" {
		return "gather"
	}
	return g.Stage
}
