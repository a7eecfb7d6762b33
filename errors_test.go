package budget_test

import (
	"context"
	"errors"
	"testing"
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
