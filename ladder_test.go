package budget_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

func after[T any](ctx context.Context, d time.Duration, v T) (T, error) {
	select {
	case <-time.After(d):
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// An admitted expensive rung that overruns is cut off in time for the last
// rung: the last rung's need is held back from every rung before it.
func TestLadderHoldsBackTheLastRungsNeed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		var live time.Duration
		l := budget.Ladder[string]{Rungs: []budget.Rung[string]{
			{Op: &budget.Op{Name: "live", Prior: 500 * time.Millisecond}, Fn: func(ctx context.Context) (string, error) {
				dl, _ := ctx.Deadline()
				live = time.Until(dl)
				return "", hang(ctx)
			}},
			{Op: &budget.Op{Name: "cache", Prior: 50 * time.Millisecond}, Fn: func(ctx context.Context) (string, error) {
				return after(ctx, 40*time.Millisecond, "cached")
			}},
		}}
		v, res, err := l.Do(ctx)
		if err != nil || v != "cached" || res.Answered != 1 {
			t.Fatalf("%q answered by %d, err %v", v, res.Answered, err)
		}
		if live != 950*time.Millisecond || time.Since(start) != 990*time.Millisecond {
			t.Fatalf("live rung got %v, answer at %v; want 950ms and 990ms", live, time.Since(start))
		}
		if r := res.Rungs[0]; r.Outcome != budget.OutcomeExpired || !errors.Is(r.Err, context.DeadlineExceeded) || r.Duration != 950*time.Millisecond {
			t.Fatalf("live rung report %+v", r)
		}
	})
}

// With measurements, the held-back need is what the last rung's admission
// requires, not its prior.
func TestLadderHoldsBackTheMeasuredNeed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		cache := learned("cache") // about 10 ms
		cache.Prior = 500 * time.Millisecond
		var live time.Duration
		l := budget.Ladder[int]{Rungs: []budget.Rung[int]{
			{Op: &budget.Op{Name: "live"}, Fn: func(ctx context.Context) (int, error) {
				dl, _ := ctx.Deadline()
				live = time.Until(dl)
				return 1, nil
			}},
			{Op: cache, Fn: func(context.Context) (int, error) { return 2, nil }},
		}}
		if v, _, err := l.Do(ctx); err != nil || v != 1 {
			t.Fatalf("v %d err %v", v, err)
		}
		if held := time.Second - live; held < 9*time.Millisecond || held > 11*time.Millisecond {
			t.Fatalf("held back %v for the cache, want its measured ~10ms", held)
		}
	})
}

func TestLadderReportsWhyEachRungDidNotAnswer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		errA, errC := errors.New("a down"), errors.New("c down")
		l := budget.Ladder[int]{Rungs: []budget.Rung[int]{
			{Op: &budget.Op{Name: "a"}, Fn: func(context.Context) (int, error) { return 0, errA }},
			{Op: &budget.Op{Name: "b", MinUseful: 2 * time.Second}, Fn: func(context.Context) (int, error) { return 1, nil }},
			{Op: &budget.Op{Name: "c"}, Fn: func(context.Context) (int, error) { return 0, errC }},
		}}
		_, res, err := l.Do(ctx)
		if !errors.Is(err, errC) || res.Answered != -1 {
			t.Fatalf("err %v answered %d", err, res.Answered)
		}
		want := []budget.Outcome{budget.OutcomeFailed, budget.OutcomeInsufficient, budget.OutcomeFailed}
		for i, r := range res.Rungs {
			if r.Outcome != want[i] || r.Err == nil {
				t.Errorf("rung %s: %v (%v), want %v with a reason", r.Name, r.Outcome, r.Err, want[i])
			}
		}
	})
}

func TestLadderStopsWhenTheCallerGivesUp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(10*time.Millisecond, cancel)
		cheap := 0
		l := budget.Ladder[int]{Rungs: []budget.Rung[int]{
			{Op: &budget.Op{Name: "live"}, Fn: func(ctx context.Context) (int, error) { return 0, hang(ctx) }},
			{Op: &budget.Op{Name: "cache"}, Fn: func(context.Context) (int, error) { cheap++; return 1, nil }},
		}}
		_, res, err := l.Do(ctx)
		if !errors.Is(err, context.Canceled) || cheap != 0 || res.Rungs[1].Outcome != budget.OutcomeNone {
			t.Fatalf("err %v, cheap rung ran %d times, status %v", err, cheap, res.Rungs[1].Outcome)
		}
		var empty budget.Ladder[int]
		if _, _, err := empty.Do(context.Background()); err == nil {
			t.Fatal("a ladder without rungs must fail")
		}
	})
}
