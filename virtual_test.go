package budget_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/timebudget/budget"
)

// origin is the start of the virtual time these tests drive ops on: a time
// with no monotonic reading, as budget sim makes them.
var origin = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// TestBeginAtEndAtOnVirtualTime drives an op on virtual time alone: a
// dependency answering in 20ms, then hanging for 10s, then answering again.
// The op learns the hang from cut-off attempts and refuses it, probes it
// with attempts capped at twice its usual latency, doubled after each probe
// that failed, and readmits calls soon after it recovers, all without
// reading the clock.
func TestBeginAtEndAtOnVirtualTime(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "dep", Prior: 20 * time.Millisecond, Cap: time.Second}
	const avail = 200 * time.Millisecond
	hangFrom, hangTo := 2*time.Second, 12*time.Second
	var admitted, refused, probes, afterRecovery, failedProbes int
	recovered := time.Duration(-1)
	for v := time.Duration(0); v < 20*time.Second; v += 10 * time.Millisecond {
		now := origin.Add(v)
		dec := op.BeginAt(now, budget.Ask{Available: avail})
		if !dec.Admit {
			refused++
			continue
		}
		admitted++
		limit := min(avail, dec.Cap)
		if dec.Probe {
			probes++
			// Twice the usual 20 ms, doubled after each probe that failed
			// (at most 6 times), but not past half the time the call has,
			// and within the op's Cap.
			if k := failedProbes; dec.Cap != min(40*time.Millisecond<<min(k, 6), avail/2, time.Second) {
				t.Fatalf("at %v a probe is capped at %v after %d failed probes, want 40ms doubled as often", v, dec.Cap, k)
			}
		} else if dec.Cap != time.Second {
			t.Fatalf("at %v an attempt is capped at %v, want the op's Cap", v, dec.Cap)
		}
		if v >= hangFrom && v < hangTo {
			op.EndAt(now, now.Add(limit), budget.OutcomeExpired, dec.Probe)
			if dec.Probe {
				failedProbes++
			}
			continue
		}

		if v >= hangTo && !dec.Probe {
			afterRecovery++
			if recovered < 0 {
				recovered = v - hangTo
			}
		}
		op.EndAt(now, now.Add(20*time.Millisecond), budget.OutcomeOK, dec.Probe)
	}
	if refused < 500 {
		t.Errorf("%d calls refused over a 10s hang of 1000 calls", refused)
	}
	if probes == 0 || probes > 150 {
		t.Errorf("%d probes over a 10s hang", probes)
	}
	if recovered < 0 || recovered > 500*time.Millisecond || afterRecovery < 700 {
		t.Errorf("calls readmitted %v after the recovery, %d of 800 admitted", recovered, afterRecovery)
	}
	var nilOp *budget.Op
	if nilOp.BeginAt(origin, budget.Ask{Available: avail}).Admit {
		t.Error("a nil op admitted an attempt")
	}
	nilOp.EndAt(origin, origin, budget.OutcomeOK, false) // records nothing, does not panic
}

// TestRandMakesDecisionsRepeatable: with a seeded Rand, an op throttling a
// dependency that fails most calls decides the same way twice, and so does
// a recovering op readmitting a share of its calls.
func TestRandMakesDecisionsRepeatable(t *testing.T) {
	t.Parallel()
	run := func(seed uint64) []bool {
		src := rand.New(rand.NewPCG(seed, 1)) // the dependency's failures
		op := &budget.Op{Name: "dep", Prior: 5 * time.Millisecond, Rand: rand.NewPCG(seed, 2)}
		var admits []bool
		for v := time.Duration(0); v < 5*time.Second; v += time.Millisecond {
			now := origin.Add(v)
			dec := op.BeginAt(now, budget.Ask{Available: time.Second})
			admits = append(admits, dec.Admit)
			if !dec.Admit {
				continue
			}
			outcome := budget.OutcomeOK
			if v < 3*time.Second && src.Float64() < 0.8 {
				outcome = budget.OutcomeFailed
			}
			op.EndAt(now, now.Add(time.Millisecond), outcome, dec.Probe)
		}
		return admits
	}
	a, b, c := run(1), run(1), run(2)
	if !slices.Equal(a, b) {
		t.Error("two runs with the same seed decided differently")
	}
	if slices.Equal(a, c) {
		t.Error("two seeds decided the same way")
	}
	if n := len(a) - count(a); n < len(a)/4 {
		t.Errorf("%d of %d calls throttled while 80%% fail", n, len(a))
	}
}

func count(xs []bool) int {
	n := 0
	for _, x := range xs {
		if x {
			n++
		}
	}
	return n
}
