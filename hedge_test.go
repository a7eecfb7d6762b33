package budget_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// learned returns an op whose estimator has seen calls of 10 ms.
func learned(name string) *budget.Op {
	op := &budget.Op{Name: name}
	for range 100 {
		op.Estimator.Record(10 * time.Millisecond)
	}
	return op
}

// slowThenFast answers after d when called as attempt 2 (the hedge), and
// hangs as attempt 1. running counts calls still in progress.
func slowThenFast(running *atomic.Int32, d time.Duration) func(ctx context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		running.Add(1)
		defer running.Add(-1)
		n := budget.AttemptNumber(ctx)
		if n == 1 {
			return 0, hang(ctx)
		}
		select {
		case <-time.After(d):
			return n, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func TestHedgeWinsAndCancelsTheLoser(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		op := learned("search")
		delay, _ := op.Estimator.Distribution(time.Now()).Quantile(0.95)
		var running atomic.Int32
		var losers budget.Detacher
		start := time.Now()
		v, err := budget.HedgeCall(ctx, &budget.Hedge{Detacher: &losers}, op, slowThenFast(&running, 5*time.Millisecond))
		if err != nil || v != 2 {
			t.Fatalf("v %d err %v: want the hedge's answer", v, err)
		}
		if got := time.Since(start); got != delay+5*time.Millisecond {
			t.Fatalf("answered after %v, want the p95 delay %v plus 5ms", got, delay)
		}
		if err := losers.Wait(context.Background()); err != nil || time.Since(start) != delay+5*time.Millisecond {
			t.Fatalf("waiting for the canceled loser: %v after %v; want it back at once", err, time.Since(start))
		}
		if n := running.Load(); n != 0 {
			t.Fatalf("%d attempts still running after the call returned", n)
		}
		var hedges, canceled int
		for _, ev := range budget.LedgerFrom(ctx).Events() {
			hedges += btoi(ev.Kind == budget.EventHedge)
			canceled += btoi(ev.Kind == budget.EventAttempt && ev.Outcome == budget.OutcomeCanceled && ev.Attempt == 1)
		}
		if hedges != 1 || canceled != 1 {
			t.Fatalf("ledger: %d hedges, %d canceled first attempts; want 1 and 1\n%s", hedges, canceled, budget.LedgerFrom(ctx))
		}
	})
}

// Regression: Do waited for the loser to return before answering, so a hedge
// that answered at 10 ms came back at 300 ms when the loser ignored its
// context. The winner now comes back at once, and a Detacher keeps track of
// the loser so that shutdown can wait for it.
func TestHedgeReturnsTheWinnerAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		op := learned("search")
		delay, _ := op.Estimator.Distribution(time.Now()).Quantile(0.95)
		var losers budget.Detacher
		start := time.Now()
		v, err := budget.HedgeCall(ctx, &budget.Hedge{Detacher: &losers}, op, func(ctx context.Context) (int, error) {
			if n := budget.AttemptNumber(ctx); n == 1 {
				time.Sleep(300 * time.Millisecond) // ignores its context
				return n, nil
			}
			time.Sleep(10 * time.Millisecond)
			return 2, nil
		})
		if err != nil || v != 2 || time.Since(start) != delay+10*time.Millisecond {
			t.Fatalf("v %d err %v after %v; want the hedge's answer at %v", v, err, time.Since(start), delay+10*time.Millisecond)
		}
		if n := losers.Running(); n != 1 {
			t.Fatalf("Detacher tracks %d attempts; want the loser", n)
		}
		if err := losers.Wait(context.Background()); err != nil || time.Since(start) != 300*time.Millisecond {
			t.Fatalf("Wait: %v at %v; want the loser back at 300ms", err, time.Since(start))
		}
		if n := losers.Failed(); n != 0 {
			t.Fatalf("Failed = %d; a hedge's loser is not a failed task", n)
		}
	})
}

func TestHedgeNotStartedWhenTheFirstAnswersInTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		calls := 0
		err := (&budget.Hedge{}).Do(ctx, learned("search"), func(context.Context) error {
			calls++
			time.Sleep(5 * time.Millisecond)
			return nil
		})
		if err != nil || calls != 1 {
			t.Fatalf("calls %d err %v", calls, err)
		}
	})
}

func TestHedgeNeedsTimeAndRetryBudget(t *testing.T) {
	t.Parallel()
	t.Run("retry budget spent", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := budget.Start(context.Background(), time.Second)
			defer cancel()
			rb := &budget.RetryQuota{MinPerSecond: -1}
			var running atomic.Int32
			_, err := budget.HedgeCall(ctx, &budget.Hedge{Quota: rb}, learned("search"), slowThenFast(&running, 0))
			if !errors.Is(err, context.DeadlineExceeded) || rb.Suppressed() != 1 {
				t.Fatalf("err %v, suppressed %d: the hedge must be suppressed and the first attempt run out", err, rb.Suppressed())
			}
			if got := kinds(budget.LedgerFrom(ctx)); len(got) != 2 || got[0] != budget.EventRefuse {
				t.Fatalf("ledger %v", got)
			}
		})
	})
	t.Run("too little time", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := budget.Start(context.Background(), 12*time.Millisecond)
			defer cancel()
			op := learned("search")
			op.ProbeEvery = -1
			var running atomic.Int32
			_, err := budget.HedgeCall(ctx, &budget.Hedge{}, op, slowThenFast(&running, 0))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err %v", err)
			}
			want := []budget.EventKind{budget.EventRefuse, budget.EventAttempt}
			if got := kinds(budget.LedgerFrom(ctx)); !slices.Equal(got, want) {
				t.Fatalf("ledger %v, want %v: no hedge with too little time left to finish", got, want)
			}
		})
	})
}

func TestHedgeBeforeMeasurementsUsesDelayAndReturnsTheLastFailure(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		errFirst, errSecond := errors.New("first"), errors.New("second")
		start := time.Now()
		err := (&budget.Hedge{Delay: 20 * time.Millisecond}).Do(ctx, &budget.Op{Name: "new"}, func(ctx context.Context) error {
			if budget.AttemptNumber(ctx) == 1 {
				time.Sleep(50 * time.Millisecond)
				return errFirst
			}
			time.Sleep(40 * time.Millisecond)
			return errSecond
		})
		if !errors.Is(err, errSecond) || time.Since(start) != 60*time.Millisecond {
			t.Fatalf("err %v after %v: want the hedge's failure at 60ms", err, time.Since(start))
		}
		// Without measurements or Delay there is no hedge.
		calls := 0
		_ = (*budget.Hedge)(nil).Do(ctx, &budget.Op{Name: "new"}, func(context.Context) error {
			calls++
			time.Sleep(time.Second)
			return nil
		})
		if calls != 1 {
			t.Fatalf("%d calls without a hedge delay", calls)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
