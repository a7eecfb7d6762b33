package budget

import (
	"strconv"
	"sync/atomic"
	"time"
)

// Regime says what an [Op]'s admission is doing, so that an operator can
// see a protection at work, and see that it lets go: [Op.RegimeAt] reports
// it with the time it began, the debug page of httpbudget and otelbudget
// show it. The regimes, from the most to the least severe, are
// [RegimeProbing], [RegimeRefusing], [RegimeThrottling], [RegimeShedding]
// and [RegimeMeasuring].
type Regime uint8

const (
	// RegimeMeasuring admits calls on the op's measurements, or on its
	// prior before it has them: no refusal of the kinds below within the
	// last estimator window.
	RegimeMeasuring Regime = iota
	// RegimeShedding refuses calls of the lower classes: the class's share
	// of Limit (or of the limit learned from refusals) is taken, or a
	// sheddable call lacks the headroom its class keeps. Calls of higher
	// classes still go.
	RegimeShedding
	// RegimeThrottling refuses calls at random for the dependency's error
	// rate (client-side adaptive throttling), probes keeping watch.
	RegimeThrottling
	// RegimeRefusing refuses calls on the op's measurements (the estimate
	// says they cannot finish in their time, or the dependency is stalled);
	// probes go on the probe schedule (see [Op]).
	RegimeRefusing
	// RegimeProbing follows a probe that succeeded: the op readmits most of
	// the calls it refused, and resets itself at the next success.
	RegimeProbing
)

var regimeNames = [...]string{"measuring", "shedding", "throttling", "refusing", "probing"}

// String returns the regime's name: "measuring", "shedding",
// "throttling", "refusing" or "probing".
func (r Regime) String() string {
	if int(r) < len(regimeNames) {
		return regimeNames[r]
	}
	return "regime(" + strconv.Itoa(int(r)) + ")"
}

// Kinds of refusal a regimeMarks entry counts, indexed as Regime less one.
const (
	regimeShed = iota
	regimeThrottle
	regimeRefuse
	regimeKinds
)

// regimeMarks keeps, for each kind of refusal, when the op last refused a
// call that way and when the current run of such refusals began (a run
// ends when no such refusal comes for an estimator window), and when a
// probe's success began the ramp or reset the op. Every time is a
// monotonic offset; zero means never.
type regimeMarks struct {
	last, since [regimeKinds]atomic.Int64
	ramp        atomic.Int64 // when the readmitted share rose from zero
	rampLast    atomic.Int64 // when the share last readmitted a call
	calm        atomic.Int64 // when the op last reset itself
}

// readmitted records that the readmitted share let a call through at m.
func (r *regimeMarks) readmitted(m int64) {
	if m-r.rampLast.Load() > int64(time.Millisecond) {
		r.rampLast.Store(m)
	}
}

// note records a refusal of kind k at offset m, with window the op's
// estimator window. Under steady refusals it costs a load: the last time
// is stored at most once a millisecond.
func (r *regimeMarks) note(k int, m, window int64) {
	last := r.last[k].Load()
	if m-last <= int64(time.Millisecond) {
		return
	}
	if m-last > window {
		r.since[k].Store(m) // a new run of such refusals
	}
	r.last[k].Store(m)
}

func (r *regimeMarks) clear() {
	for k := range regimeKinds {
		r.last[k].Store(0)
		r.since[k].Store(0)
	}
	r.ramp.Store(0)
	r.rampLast.Store(0)
}

// RegimeAt returns the regime the op is in at now and when it began; the
// zero time when the op has been measuring since it was created. A kind of
// refusal counts while the last refusal of that kind is at most one
// estimator window (a second by default) old, and the most severe regime
// that counts is reported: an op refusing on its measurements and shedding
// sheddable calls is refusing. A nil op is measuring. RegimeAt reads a
// handful of atomics and allocates nothing.
func (o *Op) RegimeAt(now time.Time) (Regime, time.Time) {
	if o == nil {
		return RegimeMeasuring, time.Time{}
	}
	m, w := mono(now), o.Estimator.window()
	r := &o.adm.regime
	if o.adm.share.Load() > 0 && m-max(r.ramp.Load(), r.rampLast.Load()) <= w {
		return RegimeProbing, unmono(r.ramp.Load())
	}
	calm := r.calm.Load()
	for k := regimeKinds - 1; k >= 0; k-- {
		last := r.last[k].Load()
		if last != 0 && m-last <= w {
			return Regime(k + 1), unmono(r.since[k].Load())
		}
		if last != 0 {
			calm = max(calm, last+w)
		}
	}
	return RegimeMeasuring, unmono(calm)
}

// unmono turns a monotonic offset back into a time; zero stays the zero
// time.
func unmono(m int64) time.Time {
	if m == 0 {
		return time.Time{}
	}
	return processStart.Add(time.Duration(m - monoBase))
}
