package budget_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// tracked wraps fn so that running counts the calls in progress.
func tracked[T any](running *atomic.Int32, fn func(ctx context.Context) (T, error)) func(ctx context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		running.Add(1)
		defer running.Add(-1)
		return fn(ctx)
	}
}

// Branches share the parent's deadline less the reserves: one bound for all,
// never a fresh timer each, and the reserve is not charged twice inside.
func TestGatherBranchesShareTheDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		ctx = budget.WithReserve(ctx, 50*time.Millisecond)
		time.Sleep(100 * time.Millisecond)
		seen := func(ctx context.Context) ([2]time.Duration, error) {
			time.Sleep(10 * time.Millisecond)
			left, _ := budget.Remaining(ctx)
			avail, _ := budget.Available(ctx)
			return [2]time.Duration{left, avail}, nil
		}
		g := budget.Gather[[2]time.Duration]{Reserve: 100 * time.Millisecond, Branches: []budget.Branch[[2]time.Duration]{
			{Name: "a", Fn: seen}, {Name: "b", Fn: seen}, {Name: "c", Fn: seen, Optional: true},
		}}
		res, err := g.Do(ctx)
		if err != nil || res.Incomplete || res.Stragglers != 0 {
			t.Fatalf("err %v, result %+v", err, res)
		}
		want := [2]time.Duration{740 * time.Millisecond, 740 * time.Millisecond} // 1s - 100ms - 50ms - 100ms - 10ms
		for _, b := range res.Branches {
			if b.Outcome != budget.OutcomeOK || b.Value != want {
				t.Errorf("branch %s: %v saw (remaining, available) %v, want %v", b.Name, b.Outcome, b.Value, want)
			}
		}
	})
}

func TestGatherReturnsByTheBoundWithWhatArrived(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		var running atomic.Int32
		start := time.Now()
		g := budget.Gather[string]{Reserve: 200 * time.Millisecond, Branches: []budget.Branch[string]{
			{Name: "profile", Fn: tracked(&running, func(ctx context.Context) (string, error) {
				return after(ctx, 100*time.Millisecond, "alice")
			})},
			{Name: "ads", Optional: true, Fn: tracked(&running, func(ctx context.Context) (string, error) {
				return after(ctx, 5*time.Second, "ad")
			})},
			{Name: "recs", Optional: true, Fn: tracked(&running, func(ctx context.Context) (string, error) {
				return "", errors.New("recs down")
			})},
		}}
		res, err := g.Do(ctx)
		if got := time.Since(start); got != 800*time.Millisecond {
			t.Fatalf("returned after %v, want the bound 800ms", got)
		}
		if err != nil || !res.Incomplete || res.Stragglers != 1 {
			t.Fatalf("err %v incomplete %v stragglers %d", err, res.Incomplete, res.Stragglers)
		}
		want := []budget.Outcome{budget.OutcomeOK, budget.OutcomeExpired, budget.OutcomeFailed}
		for i, b := range res.Branches {
			if b.Outcome != want[i] {
				t.Errorf("branch %s: %v, want %v", b.Name, b.Outcome, want[i])
			}
		}
		if res.Branches[0].Value != "alice" || !errors.Is(res.Branches[1].Err, context.DeadlineExceeded) {
			t.Fatalf("branches %+v", res.Branches)
		}
		synctest.Wait()
		if n := running.Load(); n != 0 {
			t.Fatalf("%d branches still running once canceled", n)
		}
		var straggler bool
		for _, ev := range budget.LedgerFrom(ctx).Events() {
			straggler = straggler || ev.Kind == budget.EventAttempt && ev.Stage == "ads" && ev.Outcome == budget.OutcomeExpired
		}
		if !straggler {
			t.Fatalf("the straggler is not in the ledger:\n%s", budget.LedgerFrom(ctx))
		}
	})
}

func TestGatherRequiredBranchMissingFails(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		g := budget.Gather[int]{Branches: []budget.Branch[int]{
			{Name: "fast", Fn: func(context.Context) (int, error) { return 1, nil }},
			{Name: "slow", Fn: func(ctx context.Context) (int, error) { return 0, hang(ctx) }},
		}}
		res, err := g.Do(ctx)
		var be *budget.Error
		if !errors.As(err, &be) || be.Stage != "slow" || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v: want an expiry naming the slow branch", err)
		}
		if res.Branches[0].Value != 1 || res.Stragglers != 1 {
			t.Fatalf("result %+v", res)
		}
	})
}

func TestGatherFatalRequiredBranchCancelsSiblings(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		errAuth := errors.New("not authorized")
		var running atomic.Int32
		start := time.Now()
		g := budget.Gather[int]{Stage: "page", Branches: []budget.Branch[int]{
			{Name: "auth", Fn: func(context.Context) (int, error) {
				time.Sleep(10 * time.Millisecond)
				return 0, errAuth
			}},
			{Name: "feed", Fn: tracked(&running, func(ctx context.Context) (int, error) { return 0, hang(ctx) })},
			{Name: "ads", Optional: true, Fn: tracked(&running, func(ctx context.Context) (int, error) { return 0, hang(ctx) })},
		}}
		res, err := g.Do(ctx)
		if !errors.Is(err, errAuth) || time.Since(start) != 10*time.Millisecond {
			t.Fatalf("err %v after %v: want the auth failure at once", err, time.Since(start))
		}
		if res.Stragglers != 2 || res.Branches[1].Outcome != budget.OutcomeCanceled {
			t.Fatalf("result %+v", res)
		}
		synctest.Wait()
		if n := running.Load(); n != 0 {
			t.Fatalf("%d siblings still running", n)
		}
	})
}

// Waiting for a concurrency slot is bounded by the deadline: the call returns
// on time and the branch that never got a slot is reported, not started.
func TestGatherLimitNeverWaitsPastTheDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		var running, peak atomic.Int32
		work := func(ctx context.Context) (int, error) {
			n := running.Add(1)
			defer running.Add(-1)
			if n > peak.Load() {
				peak.Store(n)
			}
			return after(ctx, 600*time.Millisecond, 1)
		}
		start := time.Now()
		g := budget.Gather[int]{Limit: 1, Branches: []budget.Branch[int]{
			{Name: "a", Fn: work}, {Name: "b", Fn: work, Optional: true}, {Name: "c", Fn: work, Optional: true},
		}}
		res, err := g.Do(ctx)
		if err != nil || time.Since(start) != time.Second {
			t.Fatalf("err %v after %v: want the partial result at the 1s bound", err, time.Since(start))
		}
		want := []budget.Outcome{budget.OutcomeOK, budget.OutcomeExpired, budget.OutcomeExpired}
		for i, b := range res.Branches {
			if b.Outcome != want[i] {
				t.Errorf("branch %s: %v, want %v", b.Name, b.Outcome, want[i])
			}
		}
		if peak.Load() != 1 || !res.Incomplete {
			t.Fatalf("peak concurrency %d, incomplete %v", peak.Load(), res.Incomplete)
		}
	})
}

func TestGatherCallerGivesUp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(30*time.Millisecond, cancel)
		g := budget.Gather[int]{Branches: []budget.Branch[int]{
			{Name: "a", Fn: func(ctx context.Context) (int, error) { return 0, hang(ctx) }},
		}}
		res, err := g.Do(ctx)
		if !errors.Is(err, context.Canceled) || res.Branches[0].Outcome != budget.OutcomeCanceled {
			t.Fatalf("err %v, status %v", err, res.Branches[0].Outcome)
		}
		// A budget already spent starts nothing.
		spent, cancel2 := budget.Start(context.Background(), 0)
		defer cancel2()
		calls := 0
		g.Branches[0].Fn = func(context.Context) (int, error) { calls++; return 1, nil }
		res, err = g.Do(spent)
		if !errors.Is(err, context.DeadlineExceeded) || calls != 0 || res.Branches[0].Outcome != budget.OutcomeExpired {
			t.Fatalf("err %v, calls %d, status %v", err, calls, res.Branches[0].Outcome)
		}
	})
}

// Over random fan-outs, Do returns by its bound and no branch outlives it by
// more than the time it takes to notice cancellation (here: none).
func TestGatherNeverLeaksAndReturnsWithinItsBound(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		total := time.Duration(50+rng.IntN(1000)) * time.Millisecond
		reserve := time.Duration(rng.IntN(50)) * time.Millisecond
		n, limit := 1+rng.IntN(12), rng.IntN(5)
		seed := rng.Uint64()
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := budget.Start(context.Background(), total)
			defer cancel()
			frng := rand.New(rand.NewPCG(seed, 0))
			var running atomic.Int32
			g := budget.Gather[int]{Reserve: reserve, Limit: limit}
			for b := range n {
				d := time.Duration(frng.IntN(int(total/time.Millisecond)*2)) * time.Millisecond
				fail := frng.IntN(10) == 0
				g.Branches = append(g.Branches, budget.Branch[int]{Optional: frng.IntN(2) == 0,
					Fn: tracked(&running, func(ctx context.Context) (int, error) {
						v, err := after(ctx, d, b)
						if err == nil && fail {
							err = errors.New("failed")
						}
						return v, err
					})})
			}
			start := time.Now()
			res, _ := g.Do(ctx)
			if got := time.Since(start); got > total-reserve {
				t.Fatalf("case %d: returned after %v, bound %v", i, got, total-reserve)
			}
			synctest.Wait()
			if r := running.Load(); r != 0 {
				t.Fatalf("case %d: %d branches still running after the call and a cancel", i, r)
			}
			for _, b := range res.Branches {
				if b.Outcome == budget.OutcomeOK && b.Err != nil || b.Outcome != budget.OutcomeOK && b.Err == nil {
					t.Fatalf("case %d: branch %+v", i, b)
				}
			}
		})
	}
}
