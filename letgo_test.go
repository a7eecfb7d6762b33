package budget_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/timebudget/budget"
)

// Regression: the estimator kept its latest samples however old, so an
// estimate learned during an outage governed a quiet op for good. Samples
// now stand in for the windows for 30 windows at most: with probes turned
// off, the op follows its prior again 30 s after the outage.
func TestOldSamplesStopGoverning(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "db", Prior: 5 * time.Millisecond, ProbeEvery: -1}
	for i := range 5 { // the outage: five calls cut off at 300 ms
		op.EndAt(origin, origin.Add(300*time.Millisecond+time.Duration(i)), budget.OutcomeExpired, false)
	}
	ask := budget.Ask{Available: 200 * time.Millisecond}
	if dec := op.AdmitAt(origin.Add(10*time.Second), ask); dec.Admit {
		t.Fatalf("10 s after five cut-offs, an op with no newer samples admitted a call: %+v", dec)
	}
	if dec := op.AdmitAt(origin.Add(31*time.Second), ask); !dec.Admit || dec.Measured {
		t.Fatalf("31 s after the outage the op still decides on its samples: %+v", dec)
	}
}

// Regression: sheddable calls were throttled with K halved, 1 for the
// default 2, and with K = 1 the throttle's own refusals, counted as
// requests, keep any refusal probability where it is, window after window:
// once the dependency recovered, sheddable callers stayed refused for good
// at the rate of the outage. Worse, fast failures counted as attempts with
// no success, so the op took the dependency as stalled and, with probes
// off, never started the attempt that would end the stall. K stays at 1.25
// or more now, so the probability falls as the admitted calls succeed; a
// fast failure is not a stall; and a stall's evidence lasts a window after
// the last attempt started.
func TestSheddableThrottleLetsGo(t *testing.T) {
	t.Parallel()
	for i, k := range []float64{0, 0.5, 1, 0, 0.5, 1, 0, 0.5, 1} {
		seed := uint64(i)
		op := &budget.Op{Name: "dep", Throttle: k, ProbeEvery: -1, Rand: rand.NewPCG(seed, 1)} // no probes: the throttle alone
		ask := budget.Ask{Available: time.Second, Criticality: budget.Sheddable}
		step := stepper(op, ask)
		for i := range 300 { // 3 s of a dependency failing 2 of every 3 calls
			step(i%3 != 0)
		}
		for range 30000 { // five minutes after it recovered
			step(false)
		}
		admitted := 0
		for range 100 { // the next second
			if step(false) {
				admitted++
			}
		}
		if admitted < 90 {
			t.Errorf("Throttle %v: %d of 100 sheddable calls admitted five minutes after the dependency recovered (seed %d)", k, admitted, seed)
		}
	}
}

// With probes on, a throttled op lets go within a second of the recovery:
// a throttled call goes as a probe on the probe schedule, and the op's
// reset after two probes that succeed clears the throttle's counts.
func TestThrottledOpProbesAndLetsGo(t *testing.T) {
	t.Parallel()
	for _, c := range []budget.Criticality{budget.Sheddable, budget.DefaultCriticality, budget.Critical} {
		op := &budget.Op{Name: "dep"}
		ask := budget.Ask{Available: time.Second, Criticality: c}
		step := stepper(op, ask)
		for range 500 { // 5 s of a dependency failing every call at once
			step(true)
		}
		for range 100 { // the second after it recovered
			step(false)
		}
		admitted := 0
		for range 100 { // the next second
			if step(false) {
				admitted++
			}
		}
		if admitted < 95 {
			t.Errorf("%v: %d of 100 calls admitted in the second second after the dependency recovered", c, admitted)
		}
	}
}

// stepper returns a function that offers op one call of ask every 10 ms
// of virtual time, from origin, against a dependency that answers in 1 ms,
// failing when told to, and reports whether the call was admitted.
func stepper(op *budget.Op, ask budget.Ask) func(fail bool) bool {
	v := time.Duration(0)
	return func(fail bool) bool {
		now := origin.Add(v)
		v += 10 * time.Millisecond
		dec := op.BeginAt(now, ask)
		if !dec.Admit {
			return false
		}
		outcome := budget.OutcomeOK
		if fail {
			outcome = budget.OutcomeFailed
		}
		op.EndAt(now, now.Add(time.Millisecond), outcome, dec.Probe)
		return true
	}
}

// A call its caller marked as a probe is admitted as a probe by an op that
// would refuse it, with whatever time it has; one every 10 ms at most, and
// none when the op's probes are off.
func TestForwardedProbe(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "db", Prior: 20 * time.Millisecond}
	for i := range 5 {
		op.EndAt(origin, origin.Add(time.Second+time.Duration(i)), budget.OutcomeExpired, false)
	}
	now := origin.Add(time.Second)
	// 15 ms is less than the op's probe floor (its Prior): its own probes
	// would not go with it.
	plain := budget.Ask{Available: 15 * time.Millisecond}
	if dec := op.BeginAt(now, plain); dec.Admit {
		t.Fatalf("an unmarked call was admitted: %+v", dec)
	}
	probe := budget.Ask{Available: 15 * time.Millisecond, Probe: true}
	dec := op.BeginAt(now, probe)
	if !dec.Admit || !dec.Probe {
		t.Fatalf("a marked call was refused: %+v", dec)
	}
	if dec := op.BeginAt(now.Add(time.Millisecond), probe); dec.Admit {
		t.Fatalf("a second marked call 1 ms later was admitted: %+v", dec)
	}
	op.EndAt(now, now.Add(5*time.Millisecond), budget.OutcomeOK, true)
	if reg, _ := op.RegimeAt(now.Add(6 * time.Millisecond)); reg != budget.RegimeProbing {
		t.Fatalf("regime %v after a probe succeeded, want probing", reg)
	}
	off := &budget.Op{Name: "db", Prior: 20 * time.Millisecond, ProbeEvery: -1}
	for i := range 5 {
		off.EndAt(origin, origin.Add(time.Second+time.Duration(i)), budget.OutcomeExpired, false)
	}
	if dec := off.BeginAt(now, probe); dec.Admit {
		t.Fatalf("an op with probes off admitted a marked call: %+v", dec)
	}
	if dec := op.BeginAt(now, budget.Ask{Probe: true}); dec.Admit {
		t.Fatalf("a marked call with no time at all was admitted: %+v", dec)
	}
}

// RegimeAt follows an op through a hang: measuring, refusing, probing,
// and measuring again once it reset itself.
func TestRegimeAt(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "db", Prior: 10 * time.Millisecond}
	if reg, since := op.RegimeAt(origin); reg != budget.RegimeMeasuring || !since.IsZero() {
		t.Fatalf("a new op: %v since %v", reg, since)
	}
	var nilOp *budget.Op
	if reg, _ := nilOp.RegimeAt(origin); reg != budget.RegimeMeasuring {
		t.Fatalf("a nil op: %v", reg)
	}
	ask := budget.Ask{Available: 200 * time.Millisecond}
	var refusedAt time.Time
	recovered := 3 * time.Second
	for v := time.Duration(0); v < 6*time.Second; v += 10 * time.Millisecond {
		now := origin.Add(v)
		dec := op.BeginAt(now, ask)
		if !dec.Admit {
			if refusedAt.IsZero() {
				refusedAt = now
			}
			continue
		}
		took, outcome := 5*time.Millisecond, budget.OutcomeOK
		if v > time.Second && v < recovered {
			took, outcome = min(ask.Available, dec.Cap), budget.OutcomeExpired
			if dec.Cap == 0 {
				took = ask.Available
			}
		}
		op.EndAt(now, now.Add(took), outcome, dec.Probe)
		if v == 2*time.Second {
			if reg, since := op.RegimeAt(now); reg != budget.RegimeRefusing || since.Before(refusedAt) {
				t.Fatalf("during the hang: %v since %v, first refusal at %v", reg, since, refusedAt)
			}
		}
	}
	if reg, since := op.RegimeAt(origin.Add(6 * time.Second)); reg != budget.RegimeMeasuring || since.Before(origin.Add(recovered)) {
		t.Fatalf("3 s after the recovery: %v since %v", reg, since.Sub(origin))
	}
	for r, want := range []string{"measuring", "shedding", "throttling", "refusing", "probing"} {
		if got := budget.Regime(r).String(); got != want {
			t.Errorf("Regime(%d) = %q, want %q", r, got, want)
		}
	}
	if got := budget.Regime(9).String(); got != "regime(9)" {
		t.Errorf("Regime(9) = %q", got)
	}
}

// A caller that marks its calls as probes and sends them with a 30-day
// budget gets no more of a refusing dependency than the op's own probes:
// twice the usual latency, doubled at most 64 times.
func TestForwardedProbeIsCapped(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "db", Prior: 20 * time.Millisecond}
	op.EndAt(origin, origin.Add(5*time.Millisecond), budget.OutcomeOK, false) // usual: 5 ms
	for i := range 5 {
		op.EndAt(origin, origin.Add(time.Second+time.Duration(i)), budget.OutcomeExpired, false)
	}
	now := origin.Add(2 * time.Second)
	dec := op.BeginAt(now, budget.Ask{Available: 30 * 24 * time.Hour, Probe: true})
	if !dec.Admit || !dec.Probe {
		t.Fatalf("a marked call was refused: %+v", dec)
	}
	if dec.Cap <= 0 || dec.Cap > 64*10*time.Millisecond {
		t.Fatalf("a forwarded probe with 30 days is capped at %v, want at most 64 × 10 ms", dec.Cap)
	}
}
