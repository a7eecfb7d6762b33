package budget_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// sleepOrDone works for d, or until ctx ends.
func sleepOrDone(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// callWith makes one call of op with a budget of d against a dependency
// that takes latency, and returns the error.
func callWith(op *budget.Op, d, latency time.Duration) error {
	ctx, cancel := budget.Start(context.Background(), d)
	defer cancel()
	return op.Do(ctx, func(ctx context.Context) error { return sleepOrDone(ctx, latency) })
}

// Regression: calls cut off at 2 ms (a client sent a 3 ms deadline) left
// only cut-off samples, CDF read 0 for every time, and a call with 1 s left
// was refused. A cut-off at t says nothing about finishing by T > t.
func TestShortDeadlineCallersRefuseOnlyCallersLikeThemselves(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		op := &budget.Op{Name: "dep", Prior: 20 * time.Millisecond}
		for range 100 {
			// A 20 ms dependency, called with 3 ms budgets: every call is cut off.
			if err := callWith(op, 3*time.Millisecond, 20*time.Millisecond); err == nil {
				t.Fatal("a 3 ms call of a 20 ms dependency succeeded")
			}
		}
		refused, admitted := 0, 0
		for range 30 {
			err := callWith(op, time.Second, 20*time.Millisecond)
			switch {
			case errors.Is(err, budget.ErrInsufficient):
				refused++
			case err == nil:
				admitted++
			default:
				t.Fatalf("a 1 s call: %v", err)
			}
		}
		if refused != 0 || admitted != 30 {
			t.Fatalf("well-behaved 1 s calls: %d refused, %d answered; want all 30 answered", refused, admitted)
		}
		// Callers like the short ones are still refused: the data say they
		// cannot finish.
		if dec := op.AdmitAt(time.Now(), budget.Ask{Available: 2500 * time.Microsecond}); dec.Admit {
			t.Fatalf("a 2.5 ms caller was admitted: %+v", dec)
		}
	})
}

// Regression: a call with barely more than MinUseful left took the probe
// slot, timed out on its own tiny budget and reset the recovery streak: with
// one client sending 3 ms budgets, a dependency that recovered to 5 ms stayed
// refused for 6 s. A probe goes only to a call that has time to succeed.
func TestProbesGoOnlyToCallsThatCanSucceed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		op := &budget.Op{Name: "dep", Prior: 5 * time.Millisecond, Observer: rec}
		latency := 5 * time.Millisecond
		for range 20 { // healthy
			if err := callWith(op, time.Second, latency); err != nil {
				t.Fatal(err)
			}
		}
		latency = 2 * time.Second // the dependency slows down
		for range 10 {
			_ = callWith(op, time.Second, latency)
		}
		if dec := op.Admit(context.Background()); !dec.Admit {
			t.Fatal("no deadline: always admitted")
		}
		latency = 5 * time.Millisecond // and recovers
		start := time.Now()
		var ok int
		for time.Since(start) < time.Second {
			_ = callWith(op, 3*time.Millisecond, latency) // the short client
			if callWith(op, time.Second, latency) == nil {
				ok++
			}
			time.Sleep(10 * time.Millisecond)
		}
		if ok < 50 {
			t.Fatalf("only %d calls answered in the second after the dependency recovered", ok)
		}
		for _, ev := range rec.of(budget.EventAttempt) {
			if ev.Probe && ev.Remaining < 10*time.Millisecond {
				t.Fatalf("a probe went to a call with %v left: %+v", ev.Remaining, ev)
			}
		}
	})
}

// Regression: with the default 1 s window and 20 samples, an op called about
// three times a second never held enough samples, and 60 of 60 calls of a
// hanging dependency were admitted. Learning is bounded by sample count too.
func TestLowTrafficOpRefusesAHangingDependencyWithinAFewCalls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		op := &budget.Op{Name: "db"} // defaults, as a user writes it
		started, firstRefusal := 0, 0
		for i := range 60 {
			ctx, cancel := budget.Start(context.Background(), 300*time.Millisecond)
			err := op.Do(ctx, func(ctx context.Context) error { started++; return sleepOrDone(ctx, time.Hour) })
			cancel()
			if firstRefusal == 0 && errors.Is(err, budget.ErrInsufficient) {
				firstRefusal = i + 1
			}
			time.Sleep(333 * time.Millisecond)
		}
		if firstRefusal == 0 || firstRefusal > 6 {
			t.Fatalf("first refusal at call %d; want the op to refuse within about 5 calls", firstRefusal)
		}
		// After that, only a trickle of probes reaches the dependency.
		if started > 12 {
			t.Fatalf("%d of 60 calls of a hanging dependency were started", started)
		}
	})
}

// At ten thousand calls a second the op follows a shift within about a
// second: once the dependency hangs, calls are refused within the window.
func TestHighTrafficOpFollowsAShiftWithinASecond(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		op := &budget.Op{Name: "dep"}
		for range 1000 {
			op.Estimator.Record(5 * time.Millisecond) // healthy, at 10k/s for 0.1 s
			time.Sleep(100 * time.Microsecond)
		}
		shift := time.Now()
		for range 10000 { // now every call takes 200ms and is cut off at 100ms
			op.Estimator.RecordCensored(100 * time.Millisecond)
			time.Sleep(100 * time.Microsecond)
			if !op.AdmitAt(time.Now(), budget.Ask{Available: 100 * time.Millisecond}).Admit {
				break
			}
		}
		if d := time.Since(shift); d > time.Second {
			t.Fatalf("the op still admitted 100 ms calls %v after the shift", d)
		}
	})
}

// Regression: Ladder held back the last rung's median need, microseconds
// once a cache has measured itself, and a hanging exact rung ran the whole
// budget; the cache was declined. The last rung's need is a high quantile
// plus scheduling slack.
func TestLadderKeepsTimeForAWarmedCache(t *testing.T) {
	t.Parallel()
	for range 3 {
		synctest.Test(t, func(t *testing.T) {
			cache := &budget.Op{Name: "cache", Prior: 10 * time.Millisecond}
			for range 100 {
				cache.Estimator.Record(5 * time.Microsecond) // warmed: answers in microseconds
			}
			l := budget.Ladder[string]{Rungs: []budget.Rung[string]{
				{Op: &budget.Op{Name: "exact"}, Fn: func(ctx context.Context) (string, error) { return "", hang(ctx) }},
				{Op: cache, Fn: func(context.Context) (string, error) { return "cached", nil }},
			}}
			ctx, cancel := budget.Start(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			v, res, err := l.Do(ctx)
			if err != nil || v != "cached" || time.Since(start) >= 100*time.Millisecond {
				t.Fatalf("%q after %v, err %v, rungs %+v: want the cache's answer inside the budget", v, time.Since(start), err, res.Rungs)
			}
			if need := l.Need(); need < 2*time.Millisecond {
				t.Fatalf("Need = %v: never a median of microseconds", need)
			}
		})
	}
}

// Regression: stages before a ladder knew nothing of it and spent the whole
// budget; the README's recipe answered 0 of 30 from the cache inside 300 ms
// with every dependency hanging. WithFallback(ctx, ladder.Need()) at the
// start keeps the cache's time from every earlier stage.
func TestStagesBeforeALadderLeaveTheFallbackItsTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		resolve, retrieve := &budget.Op{Name: "resolve"}, &budget.Op{Name: "retrieve"}
		cache := &budget.Op{Name: "cache", Prior: 10 * time.Millisecond}
		geometry := &budget.Ladder[string]{Rungs: []budget.Rung[string]{
			{Op: &budget.Op{Name: "exact"}, Fn: func(ctx context.Context) (string, error) { return "", hang(ctx) }},
			{Op: cache, Fn: func(ctx context.Context) (string, error) {
				return "cached", sleepOrDone(ctx, time.Millisecond)
			}},
		}}
		answered := 0
		for range 30 {
			ctx, cancel := budget.Start(context.Background(), 300*time.Millisecond)
			ctx = budget.WithFallback(ctx, geometry.Need())
			start := time.Now()
			_ = resolve.Do(ctx, hang) // every dependency hangs
			_ = retrieve.Do(ctx, hang)
			v, _, err := geometry.Do(ctx)
			if err == nil && v == "cached" && time.Since(start) <= 300*time.Millisecond {
				answered++
			}
			cancel()
		}
		if answered != 30 {
			t.Fatalf("the cache answered %d of 30 inside the budget", answered)
		}
	})
}

// Regression: failed calls were not recorded, so a dependency that answers
// errors in 1 ms was called forever. Client-side adaptive throttling refuses
// most calls once most fail, and keeps a trickle.
func TestFastFailuresAreThrottled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		op := &budget.Op{Name: "dep", Observer: rec}
		errDown := errors.New("503")
		calls := 0
		var throttled int
		for range 1000 {
			ctx, cancel := budget.Start(context.Background(), time.Second)
			err := op.Do(ctx, func(context.Context) error { calls++; time.Sleep(time.Millisecond); return errDown })
			cancel()
			var be *budget.Error
			if errors.As(err, &be) && be.Outcome == budget.OutcomeThrottled {
				throttled++
				if errors.Is(err, budget.ErrInsufficient) || errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("a throttled call is not a lack of time: %v", err)
				}
			}
			time.Sleep(time.Millisecond)
		}
		if calls > 250 || calls < 5 {
			t.Fatalf("%d of 1000 calls reached a dependency that fails every call; want a trickle", calls)
		}
		if n := len(rec.of(budget.EventRefuse)); n != throttled || n == 0 {
			t.Fatalf("%d refusals recorded, %d throttled", n, throttled)
		}
		// A dependency that fails a third of the time is not throttled.
		flaky := &budget.Op{Name: "flaky"}
		refused := 0
		for i := range 1000 {
			ctx, cancel := budget.Start(context.Background(), time.Second)
			err := flaky.Do(ctx, func(context.Context) error {
				if i%3 == 0 {
					return errDown
				}
				return nil
			})
			cancel()
			var be *budget.Error
			if errors.As(err, &be) && be.Outcome == budget.OutcomeThrottled {
				refused++
			}
		}
		if refused != 0 {
			t.Fatalf("%d calls of a dependency failing a third of the time were throttled", refused)
		}
	})
}

// Whatever other callers send, a caller with at least twice the
// dependency's p99 available is admitted with probability at least 0.99.
func TestAdmissionProperty(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(8, 8))
	trials, admitted := 2000, 0
	now := time.Now()
	for range trials {
		// A dependency with log-normal latency: median 100 µs to 100 ms.
		median := math.Exp(math.Log(1e5) + r.Float64()*math.Log(1e3))
		sigma := 0.1 + r.Float64()
		p99 := median * math.Exp(2.326*sigma)
		op := &budget.Op{Name: "dep", MinSamples: 1 + r.IntN(40)}
		shortShare := r.Float64() // the share of callers sending tiny deadlines
		n := 1 + r.IntN(500)
		for range n {
			latency := time.Duration(median * math.Exp(sigma*r.NormFloat64()))
			deadline := time.Duration(median * 4 * r.Float64() * r.Float64())
			if r.Float64() < shortShare {
				deadline = time.Duration(r.Float64() * float64(3*time.Millisecond))
			}
			if r.IntN(10) == 0 {
				deadline = math.MaxInt64 // no deadline at all
			}
			if latency <= deadline {
				op.Estimator.RecordAt(now, latency)
			} else {
				op.Estimator.RecordCensoredAt(now, deadline)
			}
		}
		if op.AdmitAt(now, budget.Ask{Available: time.Duration(2 * p99)}).Admit {
			admitted++
		}
	}
	if share := float64(admitted) / float64(trials); share < 0.99 {
		t.Fatalf("a caller with 2× p99 available was admitted in %.3f of trials, want at least 0.99", share)
	}
}

// A burst of calls after a quiet spell is not a stall: the stall detector
// counts from the first unanswered attempt, not from the last success
// (found when the demo's closed-loop traffic arrived in bursts and its
// healthy first stage was refused).
func TestABurstAfterAQuietSpellIsNotAStall(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		op := &budget.Op{Name: "resolve", Prior: 15 * time.Millisecond}
		for range 10 {
			if err := callWith(op, time.Second, 15*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			time.Sleep(250 * time.Millisecond) // quiet
			errs := make(chan error, 20)
			for range 20 {
				go func() { errs <- callWith(op, 300*time.Millisecond, 15*time.Millisecond) }()
			}
			for range 20 {
				if err := <-errs; err != nil {
					t.Fatalf("a call of a healthy dependency in a burst: %v", err)
				}
			}
		}
	})
}

// A dependency that stops answering is refused by the stall detector
// before its first attempt is cut off: at 200 calls a second with 1 s
// budgets, within 300 ms (four times its usual 50 ms, after the last calls
// started before it stopped have answered), not after a whole second.
func TestAStalledDependencyIsRefusedBeforeTheFirstCutOff(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		op := &budget.Op{Name: "dep", Prior: 50 * time.Millisecond}
		latency := 50 * time.Millisecond
		var mu sync.Mutex
		var wg sync.WaitGroup
		var firstRefusal time.Time
		start := time.Now()
		for i := range 400 { // 2 s at 200 calls a second
			if i == 100 {
				latency, start = time.Hour, time.Now() // it stops answering at 0.5 s
			}
			wg.Add(1)
			go func(latency time.Duration) {
				defer wg.Done()
				if err := callWith(op, time.Second, latency); errors.Is(err, budget.ErrInsufficient) {
					mu.Lock()
					if firstRefusal.IsZero() {
						firstRefusal = time.Now()
					}
					mu.Unlock()
				}
			}(latency)
			time.Sleep(5 * time.Millisecond)
		}
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		if firstRefusal.IsZero() || firstRefusal.Sub(start) > 300*time.Millisecond {
			t.Fatalf("first refusal %v after the dependency stopped answering", firstRefusal.Sub(start))
		}
	})
}
