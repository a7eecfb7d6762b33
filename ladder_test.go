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
		// The cache's need is its prior, 50ms, plus a quarter for
		// scheduling slack: 62.5ms are held back.
		if live != 937500*time.Microsecond || time.Since(start) != 977500*time.Microsecond {
			t.Fatalf("live rung got %v, answer at %v; want 937.5ms and 977.5ms", live, time.Since(start))
		}
		if r := res.Rungs[0]; r.Outcome != budget.OutcomeExpired || !errors.Is(r.Err, context.DeadlineExceeded) || r.Duration != 937500*time.Microsecond {
			t.Fatalf("live rung report %+v", r)
		}
	})
}

// With measurements, the held-back need is the last rung's measured 0.99
// quantile plus slack, not its prior.
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
		if held := time.Second - live; held < 12*time.Millisecond || held > 14*time.Millisecond {
			t.Fatalf("held back %v for the cache, want its measured ~10ms and a quarter more", held)
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
			t.Fatalf("v=%q err=%v result=%+v: the last rung must run with 52.5ms left", v, err, res)
		}
		var fallback *budget.Event
		for _, ev := range budget.LedgerFrom(ctx).Events() {
			if ev.Kind == budget.EventFallback {
				fallback = &ev
			}
		}
		// 62.5ms were held for the cache (its 50ms prior and a quarter);
		// the exact rung overran its deadline by 10ms.
		if fallback == nil || fallback.Remaining != 52500*time.Microsecond {
			t.Fatalf("fallback event %+v: want the 52.5ms that were left", fallback)
		}
	})
}

// A ladder under a 1 s budget: the primary fails after 0.3 s, the expensive
// geometry rung (typically 2 s) is declined, and the cache answers inside the
// budget. The same ladder without admission (ops that know nothing of their
// latency) spends the rest on the geometry rung and fails.
func TestScenarioLadderDeclinesTheExpensiveRungAndTheCacheAnswers(t *testing.T) {
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
