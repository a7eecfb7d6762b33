package budget_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// An answer marked DoNotRetry is not retried by Retry, whatever its
// classification, and the error says why; it reports GaveUp, so that the
// hop that got it tells its own caller not to retry either.
func TestRetryHonoursDoNotRetry(t *testing.T) {
	t.Parallel()
	boom := errors.New("503 from pay")
	for _, c := range []struct {
		sent budget.Sent
		why  string
	}{
		{budget.ServerRefused, "refused it on arrival"},
		{budget.Executed, "gave up after its own retries"},
		{0, "gave up after its own retries"}, // invalid: counts as Executed
	} {
		t.Run(c.sent.String(), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := budget.Start(context.Background(), time.Minute)
				defer cancel()
				calls := 0
				err := (&budget.Retry{MaxAttempts: 3, Idempotent: true}).Do(ctx, &budget.Op{Name: "pay"}, func(context.Context) error {
					calls++
					return fmt.Errorf("call: %w", budget.DoNotRetry(boom, c.sent))
				})
				want := c.sent
				if want == 0 {
					want = budget.Executed
				}
				if s, _ := budget.SentOf(err); calls != 1 || !errors.Is(err, boom) || s != want ||
					!budget.IsPermanent(err) || !budget.GaveUp(err) {
					t.Fatalf("%d calls, err %v (sent %v, permanent %v, gave up %v)", calls, err, s,
						budget.IsPermanent(err), budget.GaveUp(err))
				}
				if !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), "asked not to retry") {
					t.Fatalf("message %q does not say why", err)
				}
			})
		})
	}
	if budget.DoNotRetry(nil, budget.Executed) != nil {
		t.Fatal("DoNotRetry(nil) is not nil")
	}
}

// GaveUp is true exactly for the errors of a Retry that had a chance to
// retry and stopped, and for what wraps them.
func TestGaveUp(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	run := func(r *budget.Retry, ctx context.Context, fail func(n int) error) (int, error) {
		calls := 0
		err := r.Do(ctx, &budget.Op{Name: "dep"}, func(context.Context) error {
			calls++
			return fail(calls)
		})
		return calls, err
	}
	always := func(int) error { return boom }
	cases := []struct {
		name  string
		r     *budget.Retry
		fail  func(n int) error
		key   bool
		calls int
		want  bool
	}{
		{"attempts spent", &budget.Retry{MaxAttempts: 3, Backoff: -1}, always, false, 3, true},
		{"one attempt allowed", &budget.Retry{MaxAttempts: 1}, always, false, 1, false},
		{"permanent at once", &budget.Retry{Backoff: -1}, func(int) error { return budget.Permanent(boom) }, false, 1, false},
		{"permanent on the last attempt", &budget.Retry{MaxAttempts: 2, Backoff: -1}, func(n int) error {
			if n == 2 {
				return budget.Permanent(boom)
			}
			return boom
		}, false, 2, false},
		{"not retryable", &budget.Retry{Backoff: -1, Retryable: func(error) bool { return false }}, always, false, 1, false},
		{"quota spent", &budget.Retry{Backoff: -1, Quota: &budget.RetryQuota{Ratio: -1, MinPerSecond: -1}}, always, false, 1, true},
		{"uncertain", &budget.Retry{Backoff: -1}, func(int) error { return budget.MarkSent(boom, budget.MaybeExecuted) }, false, 1, true},
		{"uncertain, keyed: retried, attempts spent", &budget.Retry{Backoff: -1},
			func(int) error { return budget.MarkSent(boom, budget.MaybeExecuted) }, true, 3, true},
		{"no time for the backoff", &budget.Retry{Backoff: time.Hour, MaxBackoff: time.Hour}, always, false, 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := budget.Start(context.Background(), time.Minute)
				defer cancel()
				if c.key {
					ctx = budget.WithIdempotencyKey(ctx)
				}
				calls, err := run(c.r, ctx, c.fail)
				if calls != c.calls || budget.GaveUp(err) != c.want || !errors.Is(err, boom) {
					t.Fatalf("%d calls, err %v, GaveUp %v; want %d calls, GaveUp %v", calls, err, budget.GaveUp(err), c.calls, c.want)
				}
				if c.name == "attempts spent" && err.Error() != boom.Error() {
					t.Fatalf("message %q, want the last attempt's", err)
				}
				wrapped := []error{fmt.Errorf("handler: %w", err), errors.Join(errors.New("other"), err),
					&budget.Error{Stage: "outer", Outcome: budget.OutcomeFailed, Err: err}}
				for _, w := range wrapped {
					if budget.GaveUp(w) != c.want {
						t.Fatalf("GaveUp(%v) = %v, want %v", w, !c.want, c.want)
					}
				}
			})
		})
	}
	for _, err := range []error{nil, boom, context.DeadlineExceeded, budget.Permanent(boom),
		&budget.Error{Stage: "x", Outcome: budget.OutcomeRetrySuppressed}} {
		if budget.GaveUp(err) {
			t.Errorf("GaveUp(%v) = true", err)
		}
	}
}

// A first attempt that fails with DoNotRetry before the hedge delay ends
// the call: no hedge starts.
func TestHedgeDoesNotHedgeDoNotRetry(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Minute)
		defer cancel()
		var calls atomic.Int32
		boom := budget.DoNotRetry(errors.New("shed"), budget.ServerRefused)
		err := (&budget.Hedge{Delay: 10 * time.Millisecond}).Do(ctx, &budget.Op{Name: "dep"}, func(context.Context) error {
			calls.Add(1)
			time.Sleep(time.Millisecond)
			return boom
		})
		time.Sleep(time.Second)
		if calls.Load() != 1 || !errors.Is(err, boom) || !budget.GaveUp(err) {
			t.Fatalf("%d calls, err %v", calls.Load(), err)
		}
	})
}
