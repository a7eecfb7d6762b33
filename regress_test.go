package budget_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// Regression: a rung that overran its deadline while ending ate part of the
// time held for the last rung, and the last rung's own estimate then declined
// it. The last rung is the last chance and must run.
func TestLadderAlwaysTriesTheLastRung(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		slow := &budget.Op{Name: "exact"}
		cache := &budget.Op{Name: "cache", Prior: 50 * time.Millisecond, ProbeEvery: -1}
		ladder := &budget.Ladder[string]{Rungs: []budget.Rung[string]{
			{Op: slow, Fn: func(ctx context.Context) (string, error) {
				<-ctx.Done()
				time.Sleep(10 * time.Millisecond) // slow to notice
				return "", ctx.Err()
			}},
			{Op: cache, Fn: func(context.Context) (string, error) { return "cached", nil }},
		}}
		ctx, cancel := budget.Start(context.Background(), 100*time.Millisecond)
		defer cancel()
		v, res, err := ladder.Do(ctx)
		if err != nil || v != "cached" || res.Answered != 1 {
			t.Fatalf("v=%q err=%v result=%+v: the last rung must run with 40ms left", v, err, res)
		}
		var fallback *budget.Event
		for _, ev := range budget.LedgerFrom(ctx).Events() {
			if ev.Kind == budget.EventFallback {
				fallback = &ev
			}
		}
		if fallback == nil || fallback.Remaining != 40*time.Millisecond {
			t.Fatalf("fallback event %+v: want the 40ms that were left", fallback)
		}
	})
}

// Regression: a callee that reports its own deadline ran out (an upstream 504
// or DEADLINE_EXCEEDED, arriving just before ours) taught the op nothing.
func TestOpLearnsFromAnUpstreamDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		op := &budget.Op{Name: "pricing"}
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		err := op.Do(ctx, func(context.Context) error {
			time.Sleep(995 * time.Millisecond)
			return fmt.Errorf("upstream: %w", context.DeadlineExceeded)
		})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
		var be *budget.Error
		if !errors.As(err, &be) || be.Outcome != budget.OutcomeExpired || be.Stage != "pricing" {
			t.Fatalf("err = %#v, want an expiry naming the op", err)
		}
		time.Sleep(20 * time.Millisecond) // let the snapshot refresh
		if c := op.Estimator.Distribution(time.Now()).Censored(); c != 1 {
			t.Fatalf("censored samples = %d, want 1", c)
		}
	})
}

// Regression: a refused dependency gets no samples, its windows empty, and
// the op used to fall back to "no measurements" and let a burst of doomed
// calls through every time the windows turned. The last learned estimate
// stays in force until probes show a recovery.
func TestRefusedOpDoesNotForgetWhatItLearned(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		op := &budget.Op{Name: "slow", ProbeEvery: -1}
		for range 50 {
			op.Estimator.RecordCensored(time.Second) // every call timed out
		}
		time.Sleep(20 * time.Millisecond)
		if op.AdmitAt(time.Now(), 500*time.Millisecond).Admit {
			t.Fatal("a dependency known to time out was admitted")
		}
		time.Sleep(10 * time.Second) // no samples: everything was refused
		if d := op.AdmitAt(time.Now(), 500*time.Millisecond); d.Admit || !d.Measured {
			t.Fatalf("%+v: with its windows empty the op must keep its last estimate", d)
		}
		op.Reset()
		if d := op.AdmitAt(time.Now(), 500*time.Millisecond); !d.Admit || d.Measured {
			t.Fatalf("%+v: after Reset the op starts over", d)
		}
	})
}

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
