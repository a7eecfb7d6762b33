package budget_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// Regression: a nil Op or function crashed the process (in Gather, from a
// branch's goroutine). Every entry point now answers with an error matching
// ErrMisconfigured that says what is missing, and starts nothing.
func TestMisconfiguredCallsReturnErrors(t *testing.T) {
	t.Parallel()
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()
	op := &budget.Op{Name: "x"}
	ok := func(context.Context) error { return nil }
	okv := func(context.Context) (int, error) { return 1, nil }
	var nilOp *budget.Op
	calls := map[string]func() error{
		"Op.Do nil fn":     func() error { return op.Do(ctx, nil) },
		"Op.Do nil op":     func() error { return nilOp.Do(ctx, ok) },
		"Call nil fn":      func() error { _, err := budget.Call[int](ctx, op, nil); return err },
		"Retry.Do nil op":  func() error { return (&budget.Retry{}).Do(ctx, nil, ok) },
		"RetryCall nil fn": func() error { _, err := budget.RetryCall[int](ctx, nil, op, nil); return err },
		"Hedge.Do nil fn":  func() error { return (&budget.Hedge{}).Do(ctx, op, nil) },
		"HedgeCall nil op": func() error { _, err := budget.HedgeCall(ctx, nil, nil, okv); return err },
		"Ladder no rungs":  func() error { _, _, err := (&budget.Ladder[int]{}).Do(ctx); return err },
		"Ladder nil op": func() error {
			_, _, err := (&budget.Ladder[int]{Rungs: []budget.Rung[int]{{Fn: okv}}}).Do(ctx)
			return err
		},
		"Ladder nil fn": func() error {
			_, _, err := (&budget.Ladder[int]{Rungs: []budget.Rung[int]{{Op: op}}}).Do(ctx)
			return err
		},
		"Gather nil fn": func() error {
			_, err := (&budget.Gather[int]{Branches: []budget.Branch[int]{{Name: "a"}}}).Do(ctx)
			return err
		},
		"Steps nil step": func() error { _, err := budget.Steps{}.Run(ctx, nil); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, budget.ErrMisconfigured) {
			t.Errorf("%s: err = %v, want ErrMisconfigured", name, err)
		}
	}
	var d budget.Detacher
	if err := d.Go(ctx, "audit", nil); !errors.Is(err, budget.ErrMisconfigured) || d.Failed() != 0 || d.Running() != 0 {
		t.Fatalf("Detacher.Go(nil) = %v: failed %d, running %d", err, d.Failed(), d.Running())
	}
	var nilDetacher *budget.Detacher
	if err := nilDetacher.Go(ctx, "audit", func(context.Context) error { return nil }); !errors.Is(err, budget.ErrMisconfigured) {
		t.Fatalf("nil Detacher: %v", err)
	}
}

// Regression: emit compared two Observer interface values with !=, and Go
// panics comparing two funcs: an ObserverFunc on both an Op and its budget
// crashed Op.Do (and, in a hedge, the whole process).
func TestObserverFuncsOnOpAndBudgetDoNotPanic(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var seen atomic.Int32
		obs := budget.ObserverFunc(func(context.Context, budget.Event) { seen.Add(1) })
		ctx, cancel := budget.Config{Observer: obs}.Start(context.Background(), time.Second)
		defer cancel()
		op := &budget.Op{Name: "dep", Observer: budget.ObserverFunc(func(context.Context, budget.Event) { seen.Add(1) })}
		if err := op.Do(ctx, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		h := &budget.Hedge{Delay: time.Millisecond}
		if _, err := budget.HedgeCall(ctx, h, op, func(context.Context) (int, error) { return 1, nil }); err != nil {
			t.Fatal(err)
		}
		// The arrival once, then each attempt once to each observer.
		if n := seen.Load(); n != 5 {
			t.Fatalf("the observers saw %d events, want 5", n)
		}
		// The same comparable observer on both sees each event once.
		rec := &recorder{}
		ctx2, cancel2 := budget.Config{Observer: rec}.Start(context.Background(), time.Second)
		defer cancel2()
		_ = (&budget.Op{Name: "dep", Observer: rec}).Do(ctx2, func(context.Context) error { return nil })
		if n := len(rec.of(budget.EventAttempt)); n != 1 {
			t.Fatalf("a shared observer saw the attempt %d times", n)
		}
	})
}

// Regression: Refuse gave a canceled context an expiry, so callers answered
// 504 / DEADLINE_EXCEEDED where the caller had simply gone.
func TestRefuseOfACanceledContextIsACancellation(t *testing.T) {
	t.Parallel()
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	cancel()
	err := budget.Refuse(ctx, "pricing", time.Now(), 0, time.Millisecond)
	var be *budget.Error
	if !errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, budget.ErrInsufficient) || !errors.As(err, &be) || be.Outcome != budget.OutcomeCanceled {
		t.Fatalf("Refuse on a canceled context = %v", err)
	}
	spent, cancel2 := budget.Start(context.Background(), 0)
	defer cancel2()
	if err := budget.Refuse(spent, "pricing", time.Now(), 0, time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Refuse on an expired context = %v", err)
	}
}

// Regression: Error.Remaining was the time left after the reserve while
// Event.Remaining, Reading.Remaining and Remaining were before it. One word,
// one meaning: Remaining is before the reserve, Available after it.
func TestErrorRemainingIsBeforeTheReserve(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), 100*time.Millisecond)
		defer cancel()
		ctx = budget.WithReserve(ctx, 30*time.Millisecond)
		op := &budget.Op{Name: "slow", Prior: 200 * time.Millisecond}
		err := op.Do(ctx, func(context.Context) error { return nil })
		var be *budget.Error
		if !errors.As(err, &be) {
			t.Fatalf("err = %v, want a *budget.Error", err)
		}
		if be.Remaining != 100*time.Millisecond || be.Available != 70*time.Millisecond {
			t.Fatalf("Remaining %v, Available %v; want 100ms before the 30ms reserve and 70ms after it", be.Remaining, be.Available)
		}
	})
}
