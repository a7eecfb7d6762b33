package budget_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// A 12 s user deadline and a 10 s attempt timeout: the first attempt may use
// 10 s, the second gets min(10, 12-10) = 2 s, and the total wait is exactly
// 12 s with 2 attempts, whatever the attempt limit.
func TestSeedTwelveSecondBudgetGivesTheSecondAttemptTwoSeconds(t *testing.T) {
	t.Parallel()
	for _, maxAttempts := range []int{2, 0, 10} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := budget.Start(context.Background(), 12*time.Second)
			defer cancel()
			op := &budget.Op{Name: "model", Cap: 10 * time.Second}
			r := &budget.Retry{MaxAttempts: maxAttempts, Backoff: -1}
			start := time.Now()
			var timeouts []time.Duration
			err := r.Do(ctx, op, func(ctx context.Context) error {
				dl, _ := ctx.Deadline()
				timeouts = append(timeouts, time.Until(dl))
				return hang(ctx) // the model API hangs
			})
			if got := time.Since(start); got != 12*time.Second {
				t.Errorf("MaxAttempts %d: total wait %v, want exactly 12s", maxAttempts, got)
			}
			if want := []time.Duration{10 * time.Second, 2 * time.Second}; !slices.Equal(timeouts, want) {
				t.Errorf("MaxAttempts %d: attempt timeouts %v, want %v", maxAttempts, timeouts, want)
			}
			if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, budget.ErrInsufficient) {
				t.Errorf("err = %v, want an expiry", err)
			}
		})
	}
}

// The same layer, knowing the typical call needs 4 s, does not start a 2 s
// attempt: it stops at 10 s and keeps 2 s for a fallback.
func TestSeedTypicalFourSecondsStopsAndKeepsTheRestForAFallback(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), 12*time.Second)
		defer cancel()
		op := &budget.Op{Name: "model", Cap: 10 * time.Second, Prior: 4 * time.Second}
		r := &budget.Retry{MaxAttempts: 2, Backoff: -1}
		attempts := 0
		err := r.Do(ctx, op, func(ctx context.Context) error { attempts++; return hang(ctx) })
		if attempts != 1 || !errors.Is(err, budget.ErrInsufficient) {
			t.Fatalf("attempts %d, err %v: want one attempt, then a refusal", attempts, err)
		}
		if left, _ := budget.Remaining(ctx); left != 2*time.Second {
			t.Fatalf("left for the fallback: %v, want 2s", left)
		}
	})
}

// A 1 s budget with a 0.1 s reserve: 0.3 s in a queue, a first attempt that
// uses its 0.25 s allowance and a 0.2 s backoff leave 0.15 s for the next
// attempt; the retry after that is refused without sleeping.
func TestSeedQueueAttemptAndBackoffLeaveFifteenHundredthsThenRefuse(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		ctx = budget.WithReserve(ctx, 100*time.Millisecond)
		q := &budget.Queue[string]{Name: "checkout", Target: -1}
		if err := q.Put(ctx, "order-1"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // the consumer is busy elsewhere
		_, ictx, err := q.Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		op := &budget.Op{Name: "inventory", Cap: 250 * time.Millisecond}
		r := &budget.Retry{Backoff: 200 * time.Millisecond, Jitter: -1, MaxAttempts: 5}
		errUnavailable := errors.New("inventory unavailable")
		var timeouts []time.Duration
		err = r.Do(ictx, op, func(ctx context.Context) error {
			dl, _ := ctx.Deadline()
			timeouts = append(timeouts, time.Until(dl))
			if len(timeouts) == 1 {
				return hang(ctx) // uses its whole allowance
			}
			return errUnavailable
		})
		if want := []time.Duration{250 * time.Millisecond, 150 * time.Millisecond}; !slices.Equal(timeouts, want) {
			t.Fatalf("attempt timeouts %v, want %v", timeouts, want)
		}
		if !errors.Is(err, budget.ErrInsufficient) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a refusal that is not an expiry", err)
		}
		var be *budget.Error
		if !errors.As(err, &be) || be.Stage != "inventory" || be.Outcome != budget.OutcomeInsufficient || !errors.Is(err, errUnavailable) {
			t.Fatalf("err = %#v: want an *Error naming inventory and wrapping the last error", err)
		}
		if got := time.Since(start); got != 750*time.Millisecond {
			t.Fatalf("returned at %v, want 750ms: the refused retry must not sleep", got)
		}
		want := []budget.EventKind{budget.EventQueue, budget.EventAttempt, budget.EventBackoff,
			budget.EventAttempt, budget.EventRefuse}
		if got := kinds(budget.LedgerFrom(ctx)); !slices.Equal(got, want) {
			t.Fatalf("ledger %v, want %v", got, want)
		}
	})
}

// A ladder under a 1 s budget: the primary fails after 0.3 s, the expensive
// geometry rung (typically 2 s) is declined, and the cache answers inside the
// budget. The same ladder without admission (ops that know nothing of their
// latency) spends the rest on the geometry rung and fails.
func TestSeedLadderDeclinesTheExpensiveRungAndTheCacheAnswers(t *testing.T) {
	t.Parallel()
	errPrimary := errors.New("primary unavailable")
	rungs := func(primary, geometry, cache *budget.Op) budget.Ladder[string] {
		return budget.Ladder[string]{Rungs: []budget.Rung[string]{
			{Op: primary, Fn: func(ctx context.Context) (string, error) {
				time.Sleep(300 * time.Millisecond)
				return "", errPrimary
			}},
			{Op: geometry, Fn: func(ctx context.Context) (string, error) { return "", hang(ctx) }},
			{Op: cache, Fn: func(ctx context.Context) (string, error) {
				select {
				case <-time.After(40 * time.Millisecond):
					return "cached", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}},
		}}
	}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		// Probes are off: the decision shown is admission's alone, not the
		// occasional call let through to learn whether geometry recovered.
		l := rungs(&budget.Op{Name: "primary", Prior: 200 * time.Millisecond},
			&budget.Op{Name: "geometry", Prior: 2 * time.Second, ProbeEvery: -1},
			&budget.Op{Name: "cache", Prior: 50 * time.Millisecond})
		v, res, err := l.Do(ctx)
		if err != nil || v != "cached" || res.Answered != 2 {
			t.Fatalf("with admission: %q, answered by %d, err %v; want the cache", v, res.Answered, err)
		}
		if got := time.Since(start); got != 340*time.Millisecond {
			t.Fatalf("answered at %v, want 340ms", got)
		}
		want := []budget.Outcome{budget.OutcomeFailed, budget.OutcomeInsufficient, budget.OutcomeOK}
		for i, r := range res.Rungs {
			if r.Outcome != want[i] {
				t.Errorf("rung %s: %v, want %v", r.Name, r.Outcome, want[i])
			}
		}
		if !errors.Is(res.Rungs[0].Err, errPrimary) || !errors.Is(res.Rungs[1].Err, budget.ErrInsufficient) {
			t.Errorf("reasons %v / %v", res.Rungs[0].Err, res.Rungs[1].Err)
		}
		var skip, fallback bool
		for _, ev := range budget.LedgerFrom(ctx).Events() {
			skip = skip || ev.Kind == budget.EventRefuse && ev.Stage == "geometry" && ev.Outcome == budget.OutcomeInsufficient &&
				ev.Remaining == 700*time.Millisecond && ev.Needed == 2*time.Second
			fallback = fallback || ev.Kind == budget.EventFallback && ev.Stage == "cache"
		}
		if !skip || !fallback {
			t.Errorf("ledger lacks the skip or the fallback:\n%s", budget.LedgerFrom(ctx))
		}
	})
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		l := rungs(&budget.Op{Name: "primary"}, &budget.Op{Name: "geometry"}, &budget.Op{Name: "cache"})
		v, res, err := l.Do(ctx)
		if err == nil || v != "" || res.Answered != -1 {
			t.Fatalf("without admission: %q, answered by %d, err %v; want a failure", v, res.Answered, err)
		}
		if !errors.Is(err, context.DeadlineExceeded) || res.Rungs[1].Outcome != budget.OutcomeExpired {
			t.Fatalf("err %v, geometry %v: want the geometry rung to have timed out", err, res.Rungs[1].Outcome)
		}
		if got := time.Since(start); got != time.Second {
			t.Fatalf("failed at %v, want the whole 1s spent", got)
		}
	})
}
