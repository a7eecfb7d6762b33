package balance

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// small is a run short enough for a test: its figures mean little, its
// structure everything.
var small = Config{Workers: 4, Warmup: 100 * time.Millisecond, Healthy: 300 * time.Millisecond,
	Slow: 300 * time.Millisecond, Recovered: 300 * time.Millisecond}

// A short run reports every variant, in order, with every call counted once
// by how it ended and every share a fraction.
func TestCompareStructure(t *testing.T) {
	rep, err := Compare(context.Background(), small)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != len(Variants) {
		t.Fatalf("%d runs, want %d (one per variant)", len(rep.Runs), len(Variants))
	}
	for i, r := range rep.Runs {
		if r.Variant != Variants[i] {
			t.Errorf("run %d is %q, want %q", i, r.Variant, Variants[i])
		}
		if r.Calls == 0 {
			t.Errorf("%s: no calls", r.Variant)
		}
		if r.OK+r.Expired+r.Failed != r.Calls {
			t.Errorf("%s: %d ok + %d expired + %d failed != %d calls", r.Variant, r.OK, r.Expired, r.Failed, r.Calls)
		}
		for name, f := range map[string]float64{"in_budget": r.InBudget, "sent_to_slow": r.SentToSlow} {
			if f < 0 || f > 1 {
				t.Errorf("%s: %s is %v, not a fraction", r.Variant, name, f)
			}
		}
		if r.P99Ms <= 0 || r.HealthyP50Ms <= 0 || r.HealthyRPS <= 0 {
			t.Errorf("%s: p99 %v ms, healthy p50 %v ms, %v calls/s: want all positive", r.Variant, r.P99Ms, r.HealthyP50Ms, r.HealthyRPS)
		}
		if r.RecoveryMs != -1 && (r.RecoveryMs <= 0 || r.RecoveryMs > float64(small.Recovered.Milliseconds())) {
			t.Errorf("%s: recovery_ms %v outside the recovered phase", r.Variant, r.RecoveryMs)
		}
	}
}

func TestCompareRefusesUnknownVariant(t *testing.T) {
	if _, err := Compare(context.Background(), Config{Variants: []string{"random"}}); err == nil {
		t.Fatal("an unknown variant was accepted")
	}
	if _, err := Compare(context.Background(), Config{Fault: "slowly"}); err == nil {
		t.Fatal("an unknown fault was accepted")
	}
}

// With replica 0 failing every call at once, budget_aware sends it few
// calls (it is ejected, then probed) and round_robin a third.
func TestCompareFastFailure(t *testing.T) {
	cfg := small
	cfg.Fault, cfg.Variants, cfg.Slow = "unknown", []string{"round_robin", "budget_aware"}, time.Second
	rep, err := Compare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rr, ba := rep.Runs[0], rep.Runs[1]
	t.Logf("sent to the failing replica: round_robin %.1f %%, budget_aware %.1f %%", 100*rr.SentToSlow, 100*ba.SentToSlow)
	if ba.SentToSlow > 0.10 || rr.SentToSlow < 0.2 {
		t.Errorf("sent to the failing replica: budget_aware %.1f %%, round_robin %.1f %%; want at most 10 %% and about a third", 100*ba.SentToSlow, 100*rr.SentToSlow)
	}
}

// recovery reads the first window in which replica 0 has 80 % of a third
// of the calls.
func TestRecovery(t *testing.T) {
	at := time.Second
	var calls []call
	add := func(start time.Duration, replica int) {
		calls = append(calls, call{start: at + start, replica: replica})
	}
	for k := range 5 { // windows 0 to 4: replica 0 gets one call in ten, then one in three
		for i := range 30 {
			r := 1 + i%2
			if (k < 3 && i%10 == 0) || (k >= 3 && i%3 == 0) {
				r = 0
			}
			add(time.Duration(k)*recoveryStep+time.Duration(i)*time.Millisecond, r)
		}
	}
	if got := recovery(calls, at, 500*time.Millisecond); got != 400 {
		t.Errorf("recovery = %v ms, want 400", got)
	}
	if got := recovery(calls[:90], at, 500*time.Millisecond); got != -1 {
		t.Errorf("recovery with no window at a fair share = %v, want -1", got)
	}
}
