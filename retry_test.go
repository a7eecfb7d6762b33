package budget_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// No retry ever sleeps past the deadline: over random budgets, reserves,
// backoffs, jitter, minimum useful times, attempt durations and pushbacks,
// every backoff ends with more than the op's minimum useful time still
// available, and Do returns within the budget.
func TestRetryNeverSleepsPastTheDeadline(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	ms := func(lo, hi int) time.Duration { return time.Duration(lo+rng.IntN(hi-lo+1)) * time.Millisecond }
	for i := range 300 {
		total, reserve := ms(10, 3000), ms(0, 200)
		minUseful := ms(0, 100)
		r := &budget.Retry{
			MaxAttempts: 1 + rng.IntN(8),
			Backoff:     ms(1, 800),
			MaxBackoff:  ms(1, 2000),
			Multiplier:  1 + 2*rng.Float64(),
			Jitter:      rng.Float64() - 0.2,
		}
		opCap := ms(0, 1000)
		seed := rng.Uint64()
		synctest.Test(t, func(t *testing.T) {
			rec := &recorder{}
			ctx, cancel := budget.Config{Observer: rec}.Start(context.Background(), total)
			defer cancel()
			ctx = budget.WithReserve(ctx, reserve)
			deadline, _ := ctx.Deadline()
			op := &budget.Op{Name: "dep", Cap: opCap, MinUseful: minUseful}
			frng := rand.New(rand.NewPCG(seed, 0))
			start := time.Now()
			_ = r.Do(ctx, op, func(ctx context.Context) error {
				switch frng.IntN(3) {
				case 0:
					return hang(ctx)
				case 1:
					return budget.RetryAfter(errors.New("busy"), time.Duration(frng.IntN(1000))*time.Millisecond)
				}
				select {
				case <-time.After(time.Duration(frng.IntN(500)) * time.Millisecond):
					return errors.New("failed")
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if got := time.Since(start); got > total {
				t.Fatalf("case %d: Do returned after %v, budget %v", i, got, total)
			}
			for _, ev := range rec.of(budget.EventBackoff) {
				end := ev.At.Add(ev.Duration)
				if left := deadline.Sub(end) - reserve; left <= minUseful {
					t.Fatalf("case %d: a backoff ended with %v available, min useful %v", i, left, minUseful)
				}
			}
		})
	}
}

func TestRetryRetriesUntilSuccessAndNumbersAttempts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), 10*time.Second)
		defer cancel()
		var numbers []int
		r := &budget.Retry{Jitter: -1}
		v, err := budget.RetryCall(ctx, r, &budget.Op{Name: "dep"}, func(ctx context.Context) (string, error) {
			numbers = append(numbers, budget.AttemptNumber(ctx))
			if len(numbers) < 3 {
				return "", errors.New("flaky")
			}
			return "ok", nil
		})
		if err != nil || v != "ok" || !slices.Equal(numbers, []int{1, 2, 3}) {
			t.Fatalf("v %q err %v numbers %v", v, err, numbers)
		}
		var waits []time.Duration
		for _, ev := range budget.LedgerFrom(ctx).Events() {
			if ev.Kind == budget.EventBackoff {
				waits = append(waits, ev.Duration)
			}
		}
		if want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}; !slices.Equal(waits, want) {
			t.Fatalf("backoffs %v, want %v", waits, want)
		}
		if budget.AttemptNumber(ctx) != 0 {
			t.Fatal("AttemptNumber outside an attempt must be 0")
		}
	})
}

func TestRetryBackoffIsExponentialCappedAndJittered(t *testing.T) {
	t.Parallel()
	for _, jitter := range []float64{-1, 0, 0.5} {
		synctest.Test(t, func(t *testing.T) {
			rec := &recorder{}
			r := &budget.Retry{MaxAttempts: 6, Backoff: 100 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
				Multiplier: 3, Jitter: jitter}
			op := &budget.Op{Name: "dep", Observer: rec}
			_ = r.Do(context.Background(), op, func(context.Context) error { return errors.New("down") })
			nominal := []time.Duration{100, 300, 500, 500, 500}
			spread := map[float64]float64{-1: 0, 0: 0.2, 0.5: 0.5}[jitter]
			got := rec.of(budget.EventBackoff)
			if len(got) != len(nominal) {
				t.Fatalf("jitter %v: %d backoffs, want %d", jitter, len(got), len(nominal))
			}
			for i, ev := range got {
				n := nominal[i] * time.Millisecond
				lo, hi := time.Duration(float64(n)*(1-spread)), time.Duration(float64(n)*(1+spread))
				if ev.Duration < lo || ev.Duration > hi {
					t.Errorf("jitter %v: backoff %d = %v, want within [%v, %v]", jitter, i+1, ev.Duration, lo, hi)
				}
			}
		})
	}
}

// A deadline that our own budget set is final: the next attempt would have
// less. So is the caller giving up, and so is an error marked Permanent.
func TestRetryStopsOnFinalErrors(t *testing.T) {
	t.Parallel()
	errBad := errors.New("bad request")
	cases := []struct {
		name string
		fn   func(ctx context.Context) error
		ctx  func(context.Context) (context.Context, context.CancelFunc)
		want error
	}{
		{"budget expired", hang, nil, context.DeadlineExceeded},
		{"reserve reached", hang, func(ctx context.Context) (context.Context, context.CancelFunc) {
			return budget.WithReserve(ctx, 300*time.Millisecond), func() {}
		}, context.DeadlineExceeded},
		{"caller canceled", hang, func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"permanent", func(context.Context) error { return budget.Permanent(errBad) }, nil, errBad},
		{"nested refusal", func(ctx context.Context) error {
			return (&budget.Op{Name: "inner", MinUseful: time.Hour}).Do(ctx, func(context.Context) error { return nil })
		}, nil, budget.ErrInsufficient},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := budget.Start(context.Background(), time.Second)
				defer cancel()
				if tc.ctx != nil {
					var c2 context.CancelFunc
					ctx, c2 = tc.ctx(ctx)
					defer c2()
				}
				attempts := 0
				err := (&budget.Retry{MaxAttempts: 5}).Do(ctx, &budget.Op{Name: "dep"}, func(ctx context.Context) error {
					attempts++
					return tc.fn(ctx)
				})
				if attempts != 1 || !errors.Is(err, tc.want) {
					t.Fatalf("attempts %d, err %v; want one attempt and %v", attempts, err, tc.want)
				}
			})
		})
	}
}

// A local cap firing is not final: the attempt may succeed with the time that
// is left. A Retryable hook can still veto retries.
func TestRetryAfterCapAndRetryableHook(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		op := &budget.Op{Name: "dep", Cap: 200 * time.Millisecond}
		attempts := 0
		err := (&budget.Retry{Backoff: -1}).Do(ctx, op, func(ctx context.Context) error {
			attempts++
			if attempts == 1 {
				return hang(ctx)
			}
			return nil
		})
		if err != nil || attempts != 2 {
			t.Fatalf("attempts %d, err %v", attempts, err)
		}
		errNo := errors.New("no")
		attempts = 0
		r := &budget.Retry{Retryable: func(err error) bool { return !errors.Is(err, errNo) }}
		err = r.Do(ctx, op, func(context.Context) error { attempts++; return errNo })
		if attempts != 1 || !errors.Is(err, errNo) {
			t.Fatalf("hook ignored: attempts %d, err %v", attempts, err)
		}
	})
}

type statusError struct{ code int }

func (e *statusError) Error() string { return "status " + string(rune('0'+e.code/100)) + "xx" }

// A server's pushback replaces the backoff when it fits, and ends the loop
// at once when it does not; either way the last error stays reachable.
func TestRetryHonoursPushbackOnlyWhenItFits(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		attempts := 0
		err := (&budget.Retry{}).Do(ctx, &budget.Op{Name: "dep"}, func(context.Context) error {
			attempts++
			if attempts == 1 {
				return budget.RetryAfter(&statusError{503}, 300*time.Millisecond)
			}
			return nil
		})
		if err != nil || time.Since(start) != 300*time.Millisecond {
			t.Fatalf("err %v after %v: want success after exactly the 300ms pushback", err, time.Since(start))
		}
		start = time.Now()
		err = (&budget.Retry{}).Do(ctx, &budget.Op{Name: "dep"}, func(context.Context) error {
			return budget.RetryAfter(&statusError{503}, 2*time.Second)
		})
		var se *statusError
		if !errors.Is(err, budget.ErrInsufficient) || !errors.As(err, &se) || se.code != 503 || time.Since(start) != 0 {
			t.Fatalf("err %v after %v: want an immediate refusal wrapping the 503", err, time.Since(start))
		}
		var p budget.Pushback
		if !errors.As(err, &p) {
			t.Fatal("the pushback must stay reachable")
		}
	})
}

func TestRetryBudgetSuppressesRetries(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		ctx, cancel := budget.Config{Observer: rec}.Start(context.Background(), time.Second)
		defer cancel()
		rb := &budget.RetryQuota{MinPerSecond: -1, Ratio: 0.5}
		r := &budget.Retry{Quota: rb, Backoff: -1, MaxAttempts: 10}
		errDown := errors.New("down")
		attempts := 0
		err := r.Do(ctx, &budget.Op{Name: "dep"}, func(context.Context) error { attempts++; return errDown })
		// One request deposits half a retry: not enough for one.
		var be *budget.Error
		if attempts != 1 || !errors.As(err, &be) || be.Outcome != budget.OutcomeRetrySuppressed || !errors.Is(err, errDown) {
			t.Fatalf("attempts %d, err %v: want the retry suppressed, wrapping the last error", attempts, err)
		}
		if errors.Is(err, budget.ErrInsufficient) {
			t.Fatal("a suppressed retry is not a lack of time")
		}
		if got := rec.of(budget.EventRefuse); len(got) != 1 || got[0].Outcome != budget.OutcomeRetrySuppressed || rb.Suppressed() != 1 {
			t.Fatalf("suppressed events %v, counter %d", got, rb.Suppressed())
		}
		attempts = 0
		_ = r.Do(ctx, &budget.Op{Name: "dep"}, func(context.Context) error { attempts++; return errDown })
		if attempts != 2 { // now one whole retry is in the bucket
			t.Fatalf("second call made %d attempts, want 2", attempts)
		}
	})
}

func TestRetryCallerGivesUpDuringBackoff(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		errDown := errors.New("down")
		start := time.Now()
		err := (&budget.Retry{Backoff: time.Second}).Do(ctx, &budget.Op{Name: "dep"}, func(context.Context) error {
			return errDown
		})
		if !errors.Is(err, context.Canceled) || !errors.Is(err, errDown) || time.Since(start) != 100*time.Millisecond {
			t.Fatalf("err %v after %v: want the cancel at once, wrapping the last error", err, time.Since(start))
		}
	})
}

func TestNilRetryIsTheZeroPolicy(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var r *budget.Retry
		attempts := 0
		err := r.Do(context.Background(), &budget.Op{Name: "dep"}, func(context.Context) error {
			attempts++
			return errors.New("down")
		})
		if err == nil || attempts != 3 {
			t.Fatalf("attempts %d, err %v", attempts, err)
		}
	})
}

func TestPermanentAndRetryAfterWrappers(t *testing.T) {
	t.Parallel()
	if budget.Permanent(nil) != nil || budget.RetryAfter(nil, time.Second) != nil {
		t.Fatal("wrapping nil must give nil")
	}
	base := errors.New("base")
	p := budget.Permanent(base)
	if !budget.IsPermanent(p) || budget.IsPermanent(base) || p.Error() != "base" || !errors.Is(p, base) {
		t.Fatalf("Permanent(%v) misbehaves", base)
	}
	var pb budget.Pushback
	ra := budget.RetryAfter(p, -time.Second)
	if !errors.As(ra, &pb) || !budget.IsPermanent(ra) {
		t.Fatal("RetryAfter must keep the chain")
	}
	if d, ok := pb.RetryAfter(); !ok || d != 0 {
		t.Fatalf("RetryAfter() = %v, %v; want 0, true", d, ok)
	}
}

// A 12 s user deadline and a 10 s attempt timeout: the first attempt may use
// 10 s, the second gets min(10, 12-10) = 2 s, and the total wait is exactly
// 12 s with 2 attempts, whatever the attempt limit.
func TestScenarioTwelveSecondBudgetGivesTheSecondAttemptTwoSeconds(t *testing.T) {
	t.Parallel()
	for _, maxAttempts := range []int{2, 0, 10} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := budget.Start(context.Background(), 12*time.Second)
			defer cancel()
			op := &budget.Op{Name: "model", Cap: 10 * time.Second}
			r := &budget.Retry{MaxAttempts: maxAttempts, Backoff: -1}
			start := time.Now()
			var timeouts []time.Duration
			err := r.Do(ctx, op, func(ctx context.Context) error {
				dl, _ := ctx.Deadline()
				timeouts = append(timeouts, time.Until(dl))
				return hang(ctx) // the model API hangs
			})
			if got := time.Since(start); got != 12*time.Second {
				t.Errorf("MaxAttempts %d: total wait %v, want exactly 12s", maxAttempts, got)
			}
			if want := []time.Duration{10 * time.Second, 2 * time.Second}; !slices.Equal(timeouts, want) {
				t.Errorf("MaxAttempts %d: attempt timeouts %v, want %v", maxAttempts, timeouts, want)
			}
			if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, budget.ErrInsufficient) {
				t.Errorf("err = %v, want an expiry", err)
			}
		})
	}
}

// The same layer, knowing the typical call needs 4 s, does not start a 2 s
// attempt: it stops at 10 s and keeps 2 s for a fallback.
func TestScenarioTypicalFourSecondsStopsAndKeepsTheRestForAFallback(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), 12*time.Second)
		defer cancel()
		op := &budget.Op{Name: "model", Cap: 10 * time.Second, Prior: 4 * time.Second}
		r := &budget.Retry{MaxAttempts: 2, Backoff: -1}
		attempts := 0
		err := r.Do(ctx, op, func(ctx context.Context) error { attempts++; return hang(ctx) })
		if attempts != 1 || !errors.Is(err, budget.ErrInsufficient) {
			t.Fatalf("attempts %d, err %v: want one attempt, then a refusal", attempts, err)
		}
		if left, _ := budget.Remaining(ctx); left != 2*time.Second {
			t.Fatalf("left for the fallback: %v, want 2s", left)
		}
	})
}
