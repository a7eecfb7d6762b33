package budget_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// idempotentErr is an error that says its request was idempotent by its
// protocol's rules, as httpbudget's errors for GET requests do.
type idempotentErr struct{ error }

func (idempotentErr) Idempotent() bool { return true }
func (e idempotentErr) Unwrap() error  { return e.error }

// Retry retries an attempt that may have run only when the call is declared
// idempotent, carries an idempotency key, or its error says it is
// idempotent; not-sent, refused, executed and unclassified errors are
// retried as before.
func TestRetryUncertainOutcomes(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	cases := []struct {
		name       string
		err        error
		idempotent bool
		key        bool
		retried    bool
	}{
		{"unclassified", boom, false, false, true},
		{"not sent", budget.MarkSent(boom, budget.NotSent), false, false, true},
		{"server refused", budget.MarkSent(boom, budget.ServerRefused), false, false, true},
		{"executed", budget.MarkSent(boom, budget.Executed), false, false, true},
		{"maybe executed", budget.MarkSent(boom, budget.MaybeExecuted), false, false, false},
		{"maybe executed, wrapped", fmt.Errorf("call: %w", budget.MarkSent(boom, budget.MaybeExecuted)), false, false, false},
		{"maybe executed, idempotent", budget.MarkSent(boom, budget.MaybeExecuted), true, false, true},
		{"maybe executed, keyed", budget.MarkSent(boom, budget.MaybeExecuted), false, true, true},
		{"maybe executed, idempotent by protocol", budget.MarkSent(idempotentErr{boom}, budget.MaybeExecuted), false, false, true},
		{"maybe executed inside executed", budget.MarkSent(budget.MarkSent(boom, budget.MaybeExecuted), budget.Executed), false, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			ctx, cancel := budget.Config{Observer: rec}.Start(context.Background(), time.Minute)
			defer cancel()
			if c.key {
				ctx = budget.WithIdempotencyKey(ctx)
			}
			r := &budget.Retry{MaxAttempts: 2, Backoff: -1, Idempotent: c.idempotent}
			calls := 0
			err := r.Do(ctx, &budget.Op{Name: "pay"}, func(context.Context) error {
				calls++
				return c.err
			})
			if want := map[bool]int{true: 2, false: 1}[c.retried]; calls != want {
				t.Fatalf("%d calls, want %d", calls, want)
			}
			if !errors.Is(err, boom) {
				t.Fatalf("error %v does not wrap the attempt's error", err)
			}
			var be *budget.Error
			suppressed := errors.As(err, &be) && be.Outcome == budget.OutcomeUncertain
			if suppressed == c.retried {
				t.Fatalf("error %v: suppressed %v, retried %v", err, suppressed, c.retried)
			}
			if !suppressed {
				return
			}
			if !strings.Contains(err.Error(), "pay not retried: it may have run") {
				t.Errorf("message %q does not say why", err)
			}
			refs := rec.of(budget.EventRefuse)
			if len(refs) != 1 || refs[0].Outcome != budget.OutcomeUncertain || refs[0].Attempt != 2 {
				t.Errorf("refuse events %+v, want one uncertain for attempt 2", refs)
			}
		})
	}
}

// The last attempt's error is returned as it is: no suppression is reported
// when no retry was left to make.
func TestRetryUncertainOnLastAttemptIsPlain(t *testing.T) {
	t.Parallel()
	want := budget.MarkSent(errors.New("boom"), budget.MaybeExecuted)
	err := (&budget.Retry{MaxAttempts: 1}).Do(context.Background(), &budget.Op{Name: "pay"},
		func(context.Context) error { return want })
	if err != want {
		t.Fatalf("got %v, want the attempt's own error", err)
	}
}

// When both copies of a hedge fail, the error says as much as the copy that
// got furthest: a first copy that may have run is not hidden by a second
// that was never sent, so a Retry around the Hedge does not retry.
func TestHedgeBothFailedKeepsTheFurthest(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Minute)
		defer cancel()
		h := &budget.Hedge{Delay: 10 * time.Millisecond}
		r := &budget.Retry{MaxAttempts: 3, Backoff: -1}
		calls := 0
		err := r.Do(ctx, &budget.Op{Name: "pay"}, func(ctx context.Context) error {
			calls++
			return h.Do(ctx, &budget.Op{Name: "pay-copy"}, func(ctx context.Context) error {
				if budget.AttemptNumber(ctx) == 1 {
					time.Sleep(20 * time.Millisecond) // the hedge starts, then this copy times out after writing
					return budget.MarkSent(errors.New("timeout after write"), budget.MaybeExecuted)
				}
				time.Sleep(30 * time.Millisecond)
				return budget.MarkSent(errors.New("dial refused"), budget.NotSent)
			})
		})
		if s, _ := budget.SentOf(err); s != budget.MaybeExecuted {
			t.Fatalf("SentOf(%v) = %v, want maybe_executed", err, s)
		}
		if calls != 1 {
			t.Fatalf("the hedged call was retried: %d calls", calls)
		}
		if !strings.Contains(err.Error(), "dial refused") {
			t.Fatalf("error %v is not the last copy's", err)
		}
	})
}

func TestSentOfAndMarkSent(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	if budget.MarkSent(nil, budget.NotSent) != nil {
		t.Error("MarkSent(nil) is not nil")
	}
	for _, bad := range []budget.Sent{0, budget.Executed + 1, 255} {
		if budget.MarkSent(boom, bad) != boom {
			t.Errorf("MarkSent with invalid %v changed the error", bad)
		}
	}
	if _, ok := budget.SentOf(boom); ok {
		t.Error("an unmarked error is classified")
	}
	if _, ok := budget.SentOf(nil); ok {
		t.Error("nil is classified")
	}
	for s := budget.NotSent; s <= budget.Executed; s++ {
		err := budget.MarkSent(boom, s)
		if got, ok := budget.SentOf(fmt.Errorf("wrapped: %w", err)); !ok || got != s {
			t.Errorf("SentOf(MarkSent(%v)) = %v, %v", s, got, ok)
		}
		if err.Error() != "boom" || !errors.Is(err, boom) {
			t.Errorf("MarkSent(%v) changed the message or the chain: %v", s, err)
		}
	}
	want := map[budget.Sent]string{0: "unclassified", budget.NotSent: "not_sent", budget.ServerRefused: "server_refused",
		budget.MaybeExecuted: "maybe_executed", budget.Executed: "executed", 9: "sent(9)"}
	for s, w := range want {
		if s.String() != w {
			t.Errorf("Sent(%d).String() = %q, want %q", s, s.String(), w)
		}
	}
	if got := budget.OutcomeUncertain.String(); got != "uncertain" {
		t.Errorf("OutcomeUncertain.String() = %q", got)
	}
}

func TestWithIdempotencyKey(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	if k, ok := budget.IdempotencyKeyFrom(bg); ok || k != "" {
		t.Fatalf("a bare context carries key %q", k)
	}
	ctx := budget.WithIdempotencyKey(bg)
	k, ok := budget.IdempotencyKeyFrom(ctx)
	if !ok || len(k) != 26 {
		t.Fatalf("key %q, %v: want 26 characters", k, ok)
	}
	if again := budget.WithIdempotencyKey(ctx); again != ctx {
		t.Error("a second WithIdempotencyKey made a new context")
	}
	seen := map[string]bool{k: true}
	for range 1000 {
		k2, _ := budget.IdempotencyKeyFrom(budget.WithIdempotencyKey(bg))
		if seen[k2] {
			t.Fatalf("key %q made twice", k2)
		}
		seen[k2] = true
	}
}

// An attempt that may have run is retried only for a call that carries an
// idempotency key (or is declared idempotent); without one, the error says
// why no retry was made.
func ExampleWithIdempotencyKey() {
	op := &budget.Op{Name: "charge"}
	retry := &budget.Retry{MaxAttempts: 3, Backoff: -1}
	charge := func(ctx context.Context) error {
		if budget.AttemptNumber(ctx) == 1 {
			// What httpbudget's Transport reports when the request was
			// written and no answer came in time.
			return budget.MarkSent(errors.New("no answer"), budget.MaybeExecuted)
		}
		return nil
	}

	err := retry.Do(context.Background(), op, charge)
	fmt.Println(err)

	ctx := budget.WithIdempotencyKey(context.Background()) // once per logical call
	fmt.Println(retry.Do(ctx, op, charge))
	// Output:
	// budget: charge not retried: it may have run, and it is neither idempotent nor keyed: no answer
	// <nil>
}

func BenchmarkWithIdempotencyKey(b *testing.B) {
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		_ = budget.WithIdempotencyKey(ctx)
	}
}

// WithIdempotencyKey allocates the key, its context and the boxed value; a
// context that carries a key already costs nothing; SentOf allocates the
// interface errors.As fills, once per failed attempt, never on success.
func TestIdempotencyAllocations(t *testing.T) {
	ctx := context.Background()
	// The race detector's build allocates once more inside crypto/rand.
	if n := testing.AllocsPerRun(100, func() { _ = budget.WithIdempotencyKey(ctx) }); n > 3 && !raceEnabled {
		t.Errorf("WithIdempotencyKey: %v allocations, want at most 3", n)
	}
	keyed := budget.WithIdempotencyKey(ctx)
	if n := testing.AllocsPerRun(100, func() { _ = budget.WithIdempotencyKey(keyed) }); n != 0 {
		t.Errorf("WithIdempotencyKey on a keyed context: %v allocations, want 0", n)
	}
	err := budget.MarkSent(errors.New("boom"), budget.MaybeExecuted)
	if n := testing.AllocsPerRun(100, func() { _, _ = budget.SentOf(err) }); n > 1 {
		t.Errorf("SentOf: %v allocations, want at most 1", n)
	}
}
