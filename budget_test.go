package budget_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

func TestStartNeverOutlivesParent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ctx, cancel2 := budget.Start(parent, 5*time.Second)
		defer cancel2()
		pd, _ := parent.Deadline()
		cd, ok := ctx.Deadline()
		if !ok || !cd.Equal(pd) {
			t.Fatalf("child deadline %v, parent %v: a budget must be clamped to its parent", cd, pd)
		}
		if got := budget.LedgerFrom(ctx).Budget(); got != time.Second {
			t.Fatalf("ledger budget = %v, want the clamped 1s", got)
		}
		// A shorter child keeps its own deadline.
		short, cancel3 := budget.Start(parent, 300*time.Millisecond)
		defer cancel3()
		if left, _ := budget.Remaining(short); left != 300*time.Millisecond {
			t.Fatalf("remaining = %v, want 300ms", left)
		}
	})
}

func TestRemainingCountsDown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		if _, ok := budget.Remaining(context.Background()); ok {
			t.Fatal("Remaining reported a deadline for a context without one")
		}
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		time.Sleep(400 * time.Millisecond)
		left, ok := budget.Remaining(ctx)
		if !ok || left != 600*time.Millisecond {
			t.Fatalf("Remaining = %v, %v; want 600ms, true", left, ok)
		}
		time.Sleep(time.Second)
		if left, _ := budget.Remaining(ctx); left != -400*time.Millisecond {
			t.Fatalf("Remaining after expiry = %v, want -400ms", left)
		}
		if !errors.Is(context.Cause(ctx), budget.ErrExpired) || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("cause %v, err %v: want ErrBudgetExpired and DeadlineExceeded", context.Cause(ctx), ctx.Err())
		}
	})
}

func TestZeroOrNegativeBudgetIsSpent(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, -time.Second} {
		ctx, cancel := budget.Start(context.Background(), d)
		if ctx.Err() == nil {
			t.Errorf("Start(%v): context not done", d)
		}
		cancel()
	}
}

func TestExpiredParentRefusesChild(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), 100*time.Millisecond)
		defer cancel()
		time.Sleep(200 * time.Millisecond)
		_, cancelA, err := budget.Attempt(ctx, "retrieve", time.Second, 0)
		cancelA()
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, budget.ErrInsufficient) {
			t.Fatalf("Attempt on an expired budget: %v; want DeadlineExceeded only", err)
		}
		op := &budget.Op{Name: "retrieve"}
		called := false
		err = op.Do(ctx, func(context.Context) error { called = true; return nil })
		if called || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Do on an expired budget: called=%v err=%v", called, err)
		}
		var be *budget.Error
		if !errors.As(err, &be) || be.Stage != "retrieve" || be.Outcome != budget.OutcomeExpired {
			t.Fatalf("error %#v does not name the stage", err)
		}
	})
}

func TestAttemptTimeoutIsMinOfCapAndRemainingLessReserve(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name             string
		budget, reserve  time.Duration
		spent, cap, min_ time.Duration
		want             time.Duration // 0 means refused
		wantCause        error
	}{
		{"cap smaller", time.Second, 100 * time.Millisecond, 300 * time.Millisecond, 250 * time.Millisecond, 0, 250 * time.Millisecond, budget.ErrAttemptCap},
		{"budget smaller", time.Second, 100 * time.Millisecond, 750 * time.Millisecond, 250 * time.Millisecond, 0, 150 * time.Millisecond, budget.ErrExpired},
		{"no cap", time.Second, 0, 200 * time.Millisecond, 0, 0, 800 * time.Millisecond, budget.ErrExpired},
		{"reserve eats all", time.Second, 500 * time.Millisecond, 500 * time.Millisecond, time.Second, 0, 0, nil},
		{"below min useful", time.Second, 100 * time.Millisecond, 850 * time.Millisecond, time.Second, 50 * time.Millisecond, 0, nil},
		{"exactly min useful", time.Second, 0, 900 * time.Millisecond, time.Second, 100 * time.Millisecond, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := budget.Start(context.Background(), tc.budget)
				defer cancel()
				ctx = budget.WithReserve(ctx, tc.reserve)
				time.Sleep(tc.spent)
				actx, acancel, err := budget.Attempt(ctx, "stage", tc.cap, tc.min_)
				defer acancel()
				if tc.want == 0 {
					if !errors.Is(err, budget.ErrInsufficient) || errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("err = %v, want ErrInsufficient only", err)
					}
					if actx != ctx {
						t.Fatal("a refused attempt must return the parent context")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				dl, _ := actx.Deadline()
				if got := time.Until(dl); got != tc.want {
					t.Fatalf("attempt timeout = %v, want %v", got, tc.want)
				}
				<-actx.Done()
				if !errors.Is(context.Cause(actx), tc.wantCause) {
					t.Fatalf("cause = %v, want %v", context.Cause(actx), tc.wantCause)
				}
			})
		})
	}
}

func TestReserveAccumulatesAndAvailable(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		ctx = budget.WithReserve(ctx, 100*time.Millisecond)
		ctx = budget.WithReserve(ctx, 50*time.Millisecond)
		if r := budget.Reserve(ctx); r != 150*time.Millisecond {
			t.Fatalf("Reserve = %v", r)
		}
		if a, _ := budget.Available(ctx); a != 850*time.Millisecond {
			t.Fatalf("Available = %v, want 850ms", a)
		}
		if left, _ := budget.Remaining(ctx); left != time.Second {
			t.Fatalf("the reserve must not move the deadline: Remaining = %v", left)
		}
		if budget.WithReserve(ctx, 0) != ctx {
			t.Fatal("a zero reserve must return the parent")
		}
	})
}

func TestDependencyReceivesTheRemainingTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		ctx = budget.WithReserve(ctx, 100*time.Millisecond)
		time.Sleep(300 * time.Millisecond)
		op := &budget.Op{Name: "fake", Cap: 5 * time.Second}
		var seen time.Duration
		err := op.Do(ctx, func(ctx context.Context) error {
			dl, ok := ctx.Deadline()
			if !ok {
				t.Fatal("the dependency got no deadline")
			}
			seen = time.Until(dl)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if seen != 600*time.Millisecond {
			t.Fatalf("dependency saw %v, want remaining less reserve = 600ms", seen)
		}
	})
}

func TestHumanWaitDoesNotExpireTheRequest(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		time.Sleep(400 * time.Millisecond) // machine work before asking a person
		waitStart := time.Now()
		time.Sleep(10 * time.Minute) // the person takes their time
		resumed, cancel2 := budget.AfterWait(ctx, waitStart, time.Second)
		defer cancel2()
		if resumed.Err() != nil {
			t.Fatalf("resumed context is done: %v", resumed.Err())
		}
		if left, _ := budget.Remaining(resumed); left != time.Second {
			t.Fatalf("Remaining after the wait = %v, want a fresh 1s", left)
		}
		op := &budget.Op{Name: "apply"}
		if err := op.Do(resumed, func(context.Context) error { return nil }); err != nil {
			t.Fatalf("work after the wait refused: %v", err)
		}
		var wait *budget.Event
		for _, ev := range budget.LedgerFrom(resumed).Events() {
			if ev.Kind == budget.EventWait {
				wait = &ev
			}
		}
		if wait == nil || wait.Duration != 10*time.Minute {
			t.Fatalf("the ledger must record the 10m wait, got %+v", wait)
		}
	})
}

func TestCauseTellsBudgetFromCap(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		capped := &budget.Op{Name: "capped", Cap: 100 * time.Millisecond}
		var cause error
		err := capped.Do(ctx, func(ctx context.Context) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return ctx.Err()
		})
		if !errors.Is(cause, budget.ErrAttemptCap) || errors.Is(cause, budget.ErrExpired) {
			t.Fatalf("cause = %v, want ErrAttemptCap", cause)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
		open := &budget.Op{Name: "open"}
		_ = open.Do(ctx, func(ctx context.Context) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return ctx.Err()
		})
		if !errors.Is(cause, budget.ErrExpired) {
			t.Fatalf("cause = %v, want ErrBudgetExpired", cause)
		}
	})
}

func TestStartUntilChargesTimeSinceArrival(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		arrived := time.Now()
		time.Sleep(30 * time.Millisecond) // queued in the server
		ctx, cancel := budget.StartUntil(context.Background(), arrived.Add(200*time.Millisecond))
		defer cancel()
		if left, _ := budget.Remaining(ctx); left != 170*time.Millisecond {
			t.Fatalf("Remaining = %v, want 170ms", left)
		}
		if b := budget.LedgerFrom(ctx).Budget(); b != 170*time.Millisecond {
			t.Fatalf("ledger budget = %v, want 170ms", b)
		}
	})
}

func TestRefuseRecordsAndReports(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), 100*time.Millisecond)
		defer cancel()
		time.Sleep(99 * time.Millisecond)
		err := budget.Refuse(ctx, "pricing", time.Now(), 500*time.Microsecond, time.Millisecond)
		var be *budget.Error
		if !errors.Is(err, budget.ErrInsufficient) || !errors.As(err, &be) ||
			be.Stage != "pricing" || be.Needed != time.Millisecond || be.Budget != 100*time.Millisecond {
			t.Fatalf("err = %#v", err)
		}
		evs := budget.LedgerFrom(ctx).Events()
		if last := evs[len(evs)-1]; last.Kind != budget.EventRefuse || last.Remaining != time.Millisecond || last.Stage != "pricing" {
			t.Fatalf("ledger: %+v", last)
		}
		time.Sleep(10 * time.Millisecond)
		if err := budget.Refuse(ctx, "pricing", time.Now(), 0, time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("after expiry: %v, want DeadlineExceeded", err)
		}
	})
}

// A budget's context must behave as the context package's own: children
// derived from it are canceled with it without a goroutine per child, and
// Cause reaches through it.
func TestBudgetContextIsAFirstClassParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		before := runtime.NumGoroutine()
		var children []context.Context
		for range 100 {
			c, cc := context.WithCancel(ctx)
			defer cc()
			children = append(children, c)
		}
		// The count is the whole process's: a goroutine of an earlier test
		// may end meanwhile, so only a rise says that deriving started one.
		if after := runtime.NumGoroutine(); after > before {
			t.Fatalf("deriving 100 children started %d goroutines", after-before)
		}
		if _, ok := children[0].Deadline(); !ok {
			t.Fatal("a child lost the deadline")
		}
		if budget.LedgerFrom(children[0]) != budget.LedgerFrom(ctx) {
			t.Fatal("a child does not see the budget")
		}
		time.Sleep(2 * time.Second)
		for _, c := range children {
			if !errors.Is(context.Cause(c), budget.ErrExpired) {
				t.Fatalf("child cause = %v", context.Cause(c))
			}
		}
		if detached := context.WithoutCancel(ctx); detached.Err() != nil || budget.LedgerFrom(detached) == nil {
			t.Fatal("WithoutCancel must keep the values and drop the cancellation")
		}
	})
}
