package budget_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// The seed's case: a 0.2 s budget with 0.15 s already spent cannot fit a call
// that typically needs 1 s, whether "typical" comes from a prior or from
// measurements, and under both admission rules.
func TestAdmissionDeclinesTheSeedCase(t *testing.T) {
	t.Parallel()
	for _, rule := range []struct {
		name   string
		safety float64
	}{{"probability", 0}, {"safety 0.5", 0.5}} {
		for _, measured := range []bool{false, true} {
			name := rule.name + "/prior"
			if measured {
				name = rule.name + "/measured"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(t *testing.T) {
					op := &budget.Op{Name: "geometry", Safety: rule.safety, ProbeEvery: -1}
					if measured {
						for range 50 {
							op.Estimator.Record(time.Second)
						}
					} else {
						op.Prior = time.Second
					}
					ctx, cancel := budget.Start(context.Background(), 200*time.Millisecond)
					defer cancel()
					time.Sleep(150 * time.Millisecond)
					called := false
					err := op.Do(ctx, func(context.Context) error { called = true; return nil })
					if called {
						t.Fatal("the call was started with 50ms left for 1s of work")
					}
					if !errors.Is(err, budget.ErrInsufficient) || errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("err = %v, want ErrInsufficient and not DeadlineExceeded", err)
					}
					if got, want := err.Error(), "budget: geometry not started: too little time left"; got != want {
						t.Fatalf("Error() = %q, want %q", got, want)
					}
					var be *budget.Error
					if !errors.As(err, &be) || be.Remaining != 50*time.Millisecond || be.Budget != 200*time.Millisecond || be.Needed <= 0 {
						t.Fatalf("fields = %+v", be)
					}

					// With a budget that fits, the same op admits the call.
					ctx2, cancel2 := budget.Start(context.Background(), 3*time.Second)
					defer cancel2()
					called = false
					if err := op.Do(ctx2, func(context.Context) error { called = true; return nil }); err != nil || !called {
						t.Fatalf("call that fits: called=%v err=%v", called, err)
					}
				})
			})
		}
	}
}

func TestAdmissionSafetyRuleAdmitsHalfTheMedian(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "x", Safety: 0.5}
	now := time.Now()
	for range 100 {
		op.Estimator.RecordAt(now, time.Second)
	}
	if d := op.AdmitAt(now, budget.Ask{Available: 520 * time.Millisecond}); !d.Admit || !d.Measured {
		t.Fatalf("0.52s with median 1s and safety 0.5: %+v, want admit", d)
	}
	if d := op.AdmitAt(now, budget.Ask{Available: 480 * time.Millisecond}); d.Admit {
		t.Fatalf("0.48s with median 1s and safety 0.5: %+v, want refuse", d)
	}
}

func TestAdmissionProbabilityThreshold(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "x", Threshold: 0.9}
	now := time.Now()
	for i := range 100 {
		op.Estimator.RecordAt(now, time.Duration(i+1)*10*time.Millisecond) // 10ms..1s uniform
	}
	if d := op.AdmitAt(now, budget.Ask{Available: 950 * time.Millisecond}); !d.Admit {
		t.Fatalf("P(950ms) about 0.95 >= 0.9: %+v", d)
	}
	d := op.AdmitAt(now, budget.Ask{Available: 500 * time.Millisecond})
	if d.Admit || d.Probability < 0.45 || d.Probability > 0.55 {
		t.Fatalf("P(500ms) about 0.5 < 0.9: %+v", d)
	}
	if !near(d.Needed, 900*time.Millisecond) {
		t.Fatalf("Needed = %v, want about the 0.9 quantile, 900ms", d.Needed)
	}
	if d := op.AdmitAt(now, budget.Ask{Available: 0}); d.Admit {
		t.Fatal("nothing left must never be admitted")
	}
}

func TestUnlearnedOpWithoutPriorAdmits(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "new"}
	if d := op.AdmitAt(time.Now(), budget.Ask{Available: time.Millisecond}); !d.Admit || d.Measured {
		t.Fatalf("%+v: an op with no prior and no samples admits", d)
	}
	op.MinUseful = 5 * time.Millisecond
	if d := op.AdmitAt(time.Now(), budget.Ask{Available: 5 * time.Millisecond}); d.Admit {
		t.Fatalf("%+v: at MinUseful the attempt is refused", d)
	}
}

// A dependency that was slow and is refused on every call must be noticed
// again once it recovers: probes get through, and three fast ones in a row
// discard the stale estimate.
func TestAdmissionRecoversThroughProbes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		latency := 5 * time.Second
		dep := func(ctx context.Context) error {
			mu.Lock()
			d := latency
			mu.Unlock()
			select {
			case <-time.After(d):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		op := &budget.Op{Name: "slowdep", ProbeEvery: 200 * time.Millisecond}
		// Traffic: a request every 10ms, each with a 300ms budget.
		traffic := func(d time.Duration) (ok, refused, total int) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				wg.Go(func() {
					ctx, cancel := budget.Start(context.Background(), 300*time.Millisecond)
					defer cancel()
					err := op.Do(ctx, dep)
					mu.Lock()
					defer mu.Unlock()
					total++
					if err == nil {
						ok++
					} else if errors.Is(err, budget.ErrInsufficient) {
						refused++
					}
				})
			}
			wg.Wait()
			return ok, refused, total
		}
		traffic(time.Second) // learn that it hangs: calls time out
		_, refused, total := traffic(2 * time.Second)
		if refused < total*8/10 {
			t.Fatalf("only %d of %d calls refused against a dependency known to hang", refused, total)
		}
		mu.Lock()
		latency = 20 * time.Millisecond // it recovers
		mu.Unlock()
		ok, _, total := traffic(2 * time.Second)
		// Probes every 200ms, three in a row: the estimate is reset after
		// about 0.6s, so well over half of the 2s of traffic succeeds.
		if ok < total/2 {
			t.Fatalf("after recovery only %d of %d calls succeeded in 2s", ok, total)
		}
		ok, _, total = traffic(time.Second)
		if ok != total {
			t.Fatalf("a second after recovery %d of %d calls succeeded; want all", ok, total)
		}
	})
}

func TestDoExpiryWrapsTheError(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), 100*time.Millisecond)
		defer cancel()
		op := &budget.Op{Name: "hang"}
		sentinel := errors.New("driver: read aborted")
		err := op.Do(ctx, func(ctx context.Context) error {
			<-ctx.Done()
			return sentinel
		})
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, sentinel) || errors.Is(err, budget.ErrInsufficient) {
			t.Fatalf("err = %v: want DeadlineExceeded wrapping the driver's error", err)
		}
		if got, want := err.Error(), "budget: hang did not complete in the time available: driver: read aborted"; got != want {
			t.Fatalf("Error() = %q, want %q", got, want)
		}
		// Timed-out attempts are recorded as censored samples.
		if d := op.Estimator.Distribution(time.Now()); d.Censored() != 1 {
			t.Fatalf("censored samples = %d, want 1", d.Censored())
		}
	})
}

func TestDoPassesOtherErrorsThrough(t *testing.T) {
	t.Parallel()
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()
	op := &budget.Op{Name: "fails"}
	boom := errors.New("boom")
	if err := op.Do(ctx, func(context.Context) error { return boom }); err != boom {
		t.Fatalf("err = %v, want the function's own error", err)
	}
	v, err := budget.Call(ctx, op, func(context.Context) (int, error) { return 42, nil })
	if v != 42 || err != nil {
		t.Fatalf("Call = %v, %v", v, err)
	}
}

func TestDoWithoutDeadlineUsesCapOnly(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		op := &budget.Op{Name: "capped", Cap: 250 * time.Millisecond, Prior: time.Hour}
		var got time.Duration
		err := op.Do(context.Background(), func(ctx context.Context) error {
			dl, _ := ctx.Deadline()
			got = time.Until(dl)
			return nil
		})
		if err != nil || got != 250*time.Millisecond {
			t.Fatalf("err=%v deadline in %v; want the cap, 250ms", err, got)
		}
	})
}

func TestObserverAndLedgerSeeEveryDecision(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var kinds []budget.EventKind
		obs := budget.ObserverFunc(func(_ context.Context, ev budget.Event) {
			mu.Lock()
			kinds = append(kinds, ev.Kind)
			mu.Unlock()
		})
		ctx, cancel := budget.Config{Observer: obs}.Start(context.Background(), time.Second)
		defer cancel()
		fast := &budget.Op{Name: "fast"}
		slow := &budget.Op{Name: "slow", Prior: 10 * time.Second, ProbeEvery: -1}
		_ = fast.Do(ctx, func(context.Context) error { time.Sleep(100 * time.Millisecond); return nil })
		_ = slow.Do(ctx, func(context.Context) error { return nil })
		want := []budget.EventKind{budget.EventArrival, budget.EventAttempt, budget.EventRefuse}
		mu.Lock()
		defer mu.Unlock()
		if len(kinds) != len(want) {
			t.Fatalf("observer saw %v, want %v", kinds, want)
		}
		evs := budget.LedgerFrom(ctx).Events()
		for i := range want {
			if kinds[i] != want[i] || evs[i].Kind != want[i] {
				t.Fatalf("event %d: observer %v, ledger %v, want %v", i, kinds[i], evs[i].Kind, want[i])
			}
		}
		att := evs[1]
		if att.Stage != "fast" || att.Duration != 100*time.Millisecond || att.Outcome != budget.OutcomeOK || att.Remaining != time.Second {
			t.Fatalf("attempt event = %+v", att)
		}
		if ref := evs[2]; ref.Offset != 100*time.Millisecond || ref.Remaining != 900*time.Millisecond || ref.Needed != 10*time.Second {
			t.Fatalf("refuse event = %+v", ref)
		}
	})
}

func TestSuggestedTimeout(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "x", Prior: 100 * time.Millisecond}
	if got := op.SuggestedTimeout(); got != 300*time.Millisecond {
		t.Fatalf("before samples: %v, want 3×prior", got)
	}
	for range 100 {
		op.Estimator.Record(40 * time.Millisecond)
	}
	op.Estimator.Reset() // drop any cached snapshot taken above
	for range 100 {
		op.Estimator.Record(40 * time.Millisecond)
	}
	if got := op.SuggestedTimeout(); !near(got, 120*time.Millisecond) {
		t.Fatalf("after samples: %v, want about 3×p99 = 120ms", got)
	}
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
		if op.AdmitAt(time.Now(), budget.Ask{Available: 500 * time.Millisecond}).Admit {
			t.Fatal("a dependency known to time out was admitted")
		}
		time.Sleep(10 * time.Second) // no samples: everything was refused
		if d := op.AdmitAt(time.Now(), budget.Ask{Available: 500 * time.Millisecond}); d.Admit || !d.Measured {
			t.Fatalf("%+v: with its windows empty the op must keep its last estimate", d)
		}
		op.Reset()
		if d := op.AdmitAt(time.Now(), budget.Ask{Available: 500 * time.Millisecond}); !d.Admit || d.Measured {
			t.Fatalf("%+v: after Reset the op starts over", d)
		}
	})
}

// errStatementTimeout stands for a database's own statement timeout, which
// does not match context.DeadlineExceeded.
var errStatementTimeout = errors.New("ERROR: canceling statement due to statement timeout (SQLSTATE 57014)")

// An Op's Expired hook turns a server-side timeout into an expiry: a cut-off
// sample the op learns from, and an error that matches
// context.DeadlineExceeded.
func TestOpExpiredHookRecordsServerTimeouts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		db := &budget.Op{Name: "db", Expired: func(err error) bool { return errors.Is(err, errStatementTimeout) }}
		err := db.Do(ctx, func(context.Context) error {
			time.Sleep(300 * time.Millisecond)
			return errStatementTimeout
		})
		var be *budget.Error
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errStatementTimeout) ||
			!errors.As(err, &be) || be.Outcome != budget.OutcomeExpired || be.Stage != "db" {
			t.Fatalf("err = %v: want an expiry of db wrapping the server's error", err)
		}
		if c := db.Estimator.Distribution(time.Now()).Censored(); c != 1 {
			t.Fatalf("%d cut-off samples, want 1", c)
		}
		// Without the hook the same error is a failure, not a sample.
		plain := &budget.Op{Name: "db"}
		err = plain.Do(ctx, func(context.Context) error { return errStatementTimeout })
		if errors.Is(err, context.DeadlineExceeded) || plain.Estimator.Distribution(time.Now()).Count() != 0 {
			t.Fatalf("err = %v, %d samples", err, plain.Estimator.Distribution(time.Now()).Count())
		}
	})
}
