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

// Each step's timeout is min(remaining, cap), and the loop stops with a
// partial result when less than the minimum step is left.
func TestStepsSpendTheBudgetAndStopWithAPartialResult(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		var timeouts []time.Duration
		var facts []int // the partial result
		res, err := budget.Steps{Cap: 500 * time.Millisecond, MinUseful: 250 * time.Millisecond}.Run(ctx,
			func(ctx context.Context, n int) (bool, error) {
				dl, _ := ctx.Deadline()
				timeouts = append(timeouts, time.Until(dl))
				time.Sleep(200 * time.Millisecond)
				facts = append(facts, n)
				return false, nil
			})
		want := []time.Duration{500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 400 * time.Millisecond}
		if !slices.Equal(timeouts, want) {
			t.Fatalf("step timeouts %v, want %v", timeouts, want)
		}
		if res.Outcome != budget.OutcomeInsufficient || res.Steps != 4 || len(facts) != 4 || !errors.Is(err, budget.ErrInsufficient) {
			t.Fatalf("result %+v err %v", res, err)
		}
		var steps int
		for _, ev := range budget.LedgerFrom(ctx).Events() {
			if ev.Kind == budget.EventAttempt && ev.Stage == "step" {
				steps++
			}
		}
		if steps != 4 {
			t.Fatalf("%d steps in the ledger", steps)
		}
	})
}

func TestStepsStopReasons(t *testing.T) {
	t.Parallel()
	errTool := errors.New("tool failed")
	cases := []struct {
		name    string
		steps   budget.Steps
		step    func(ctx context.Context, n int) (bool, error)
		reason  budget.Outcome
		n       int
		wantErr error
	}{
		{"done", budget.Steps{}, func(_ context.Context, n int) (bool, error) { return n == 3, nil },
			budget.OutcomeOK, 3, nil},
		{"iteration bound", budget.Steps{Max: 5}, func(context.Context, int) (bool, error) { return false, nil },
			budget.OutcomeLimit, 5, budget.ErrStepLimit},
		{"default bound", budget.Steps{}, func(context.Context, int) (bool, error) { return false, nil },
			budget.OutcomeLimit, 100, budget.ErrStepLimit},
		{"failed", budget.Steps{}, func(_ context.Context, n int) (bool, error) {
			if n == 2 {
				return false, errTool
			}
			return false, nil
		}, budget.OutcomeFailed, 2, errTool},
		{"step cap", budget.Steps{Cap: 100 * time.Millisecond}, func(ctx context.Context, _ int) (bool, error) {
			return false, hang(ctx)
		}, budget.OutcomeExpired, 1, context.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := budget.Start(context.Background(), time.Hour)
				defer cancel()
				res, err := tc.steps.Run(ctx, tc.step)
				if res.Outcome != tc.reason || res.Steps != tc.n || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
					t.Fatalf("result %+v err %v; want %v after %d steps, err %v", res, err, tc.reason, tc.n, tc.wantErr)
				}
			})
		})
	}
	t.Run("caller gives up", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			res, err := budget.Steps{}.Run(ctx, func(ctx context.Context, n int) (bool, error) {
				if n == 2 {
					cancel()
					return false, ctx.Err()
				}
				return false, nil
			})
			if res.Outcome != budget.OutcomeCanceled || !errors.Is(err, context.Canceled) {
				t.Fatalf("result %+v err %v", res, err)
			}
		})
	})
}
func TestOutcomeStrings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ got, want string }{
		{budget.OutcomeNone.String(), "none"},
		{budget.OutcomeOK.String(), "ok"},
		{budget.OutcomeFailed.String(), "failed"},
		{budget.OutcomeExpired.String(), "expired"},
		{budget.OutcomeCanceled.String(), "canceled"},
		{budget.OutcomeInsufficient.String(), "insufficient"},
		{budget.OutcomeShed.String(), "shed"},
		{budget.OutcomeRetrySuppressed.String(), "retry_suppressed"},
		{budget.OutcomeLimit.String(), "limit"},
		{budget.Outcome(42).String(), "outcome(42)"},
	} {
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
}
