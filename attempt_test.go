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

// A 1 s budget with a 0.1 s reserve: 0.3 s in a queue, a first attempt that
// uses its 0.25 s allowance and a 0.2 s backoff leave 0.15 s for the next
// attempt; the retry after that is refused without sleeping.
func TestScenarioQueueAttemptAndBackoffLeaveFifteenHundredthsThenRefuse(t *testing.T) {
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
