package budget

import (
	"context"
	"time"
)

// Admission defaults, stated in [Op]'s field docs.
const (
	defaultThreshold  = 0.5
	defaultMinSamples = 20
	defaultProbeEvery = 500 * time.Millisecond
)

// probeWinsToReset is how many probes in a row must succeed inside the time
// the estimate called insufficient before the estimate is discarded.
const probeWinsToReset = 3

// Admission is the outcome of an [Op]'s admission check.
type Admission struct {
	// Admit reports whether the attempt should start.
	Admit bool
	// Probe reports that the attempt was admitted as a probe although the
	// estimate alone would have refused it.
	Probe bool
	// Available is the time the attempt could use: remaining less reserve.
	Available time.Duration
	// Needed is the time the estimate says the attempt needs to reach the
	// threshold (or Safety × median); zero when nothing is known.
	Needed time.Duration
	// Probability is the estimated chance of finishing within Available.
	Probability float64
	// Measured reports whether the estimate came from measurements rather
	// than the prior.
	Measured bool
}

// Admit reports whether an attempt should start now in ctx's budget: the time
// available is ctx's remaining time less its reserve. It is shorthand for
// [Op.AdmitAt] with the present time. It records nothing and takes no probe
// slot, so tools and pages may call it freely. It reads the clock once and
// allocates nothing.
func (o *Op) Admit(ctx context.Context) Admission {
	now, remaining, ok := clock(ctx)
	avail := noDeadline
	if ok {
		avail = remaining - stateOf(ctx).reserveOrZero()
	}
	return o.AdmitAt(now, avail)
}

// AdmitAt reports whether an attempt with available time left (remaining less
// reserve) should start at now. It neither records anything nor takes a probe
// slot. It allocates nothing.
func (o *Op) AdmitAt(now time.Time, available time.Duration) Admission {
	dec := Admission{Available: available, Probability: 1, Admit: true}
	if available <= 0 || available <= o.MinUseful {
		dec.Admit, dec.Probability = false, 0
		return dec
	}
	if available == noDeadline {
		return dec
	}
	dist := o.estimate(now)
	if dist == nil {
		if o.Prior <= 0 {
			return dec
		}
		dec.Needed = o.Prior
		if o.Safety > 0 {
			dec.Needed = time.Duration(o.Safety * float64(o.Prior))
		}
		if available < dec.Needed {
			dec.Admit, dec.Probability = false, 0
		}
		return dec
	}
	dec.Measured = true
	dec.Probability = dist.CDF(available)
	if o.Safety > 0 {
		dec.Needed = time.Duration(o.Safety * float64(dist.p50))
		dec.Admit = available >= dec.Needed
		return dec
	}
	dec.Admit = dec.Probability >= o.threshold()
	if !dec.Admit {
		dec.Needed, _ = dist.Quantile(o.threshold())
	}
	return dec
}

// estimate returns the distribution admission uses at now, or nil when
// there is none and the prior applies. While an op refuses calls it stops
// getting samples, and its windows empty; falling back to the prior then
// would let a burst of doomed calls through every time the windows turn. So
// the last estimate that had enough samples stays in force until the op is
// reset (by probes that show a recovery, or by [Op.Reset]).
func (o *Op) estimate(now time.Time) *Distribution {
	dist := o.Estimator.Distribution(now)
	if dist.n >= o.minSamples() {
		if o.learned.Load() != dist {
			o.learned.Store(dist)
		}
		return dist
	}
	return o.learned.Load()
}

func (o *Op) minSamples() int {
	if o.MinSamples > 0 {
		return o.MinSamples
	}
	return defaultMinSamples
}

func (o *Op) threshold() float64 {
	if o.Threshold > 0 && o.Threshold <= 1 {
		return o.Threshold
	}
	return defaultThreshold
}

// admit is AdmitAt plus the probe trickle.
func (o *Op) admit(now time.Time, available time.Duration) Admission {
	dec := o.AdmitAt(now, available)
	if dec.Admit || available <= 0 || available <= o.MinUseful || o.ProbeEvery < 0 {
		return dec
	}
	every := o.ProbeEvery
	if every == 0 {
		every = defaultProbeEvery
	}
	last := o.lastProbe.Load()
	if last == 0 {
		// The first refusal starts the probe interval: the op has not been
		// refusing long enough for a probe to tell anything.
		o.lastProbe.CompareAndSwap(0, now.UnixNano())
		return dec
	}
	if now.UnixNano()-last >= int64(every) && o.lastProbe.CompareAndSwap(last, now.UnixNano()) {
		dec.Admit, dec.Probe = true, true
	}
	return dec
}

// probed learns from the end of a probe that started at start: a success is
// evidence that the estimate is too pessimistic, and the next probe may go
// at once (like a breaker's half-open state letting trial calls through one
// after another); probeWinsToReset successes in a row reset the op. A failure
// ends the streak, unless a probe started after it has succeeded since: a
// probe sent just before a recovery fails late and says nothing new.
func (o *Op) probed(start time.Time, ok bool) {
	if ok {
		o.lastWin.Store(start.UnixNano())
		if o.probeWins.Add(1) >= probeWinsToReset {
			o.Reset()
			return
		}
		o.lastProbe.Store(1) // long ago: the next refusal probes
		return
	}
	if start.UnixNano() >= o.lastWin.Load() {
		o.probeWins.Store(0)
	}
}

// need returns the time an attempt of o is expected to need at now: the
// time its admission requires (Safety × median, or the latency at its
// threshold, or Prior before it has measurements), and always more than its
// MinUseful.
func (o *Op) need(now time.Time) time.Duration {
	var est time.Duration
	dist := o.estimate(now)
	switch {
	case dist != nil && o.Safety > 0:
		est = time.Duration(o.Safety * float64(dist.Median()))
	case dist != nil:
		est, _ = dist.Quantile(o.threshold())
	case o.Safety > 0:
		est = time.Duration(o.Safety * float64(o.Prior))
	default:
		est = o.Prior
	}
	return max(est, o.MinUseful+1)
}

// SuggestedTimeout returns a per-call timeout derived from measurements: three
// times the observed p99, the rule of thumb of "a small multiple of p99". With
// too few samples it is three times Prior, or zero when there is no prior.
func (o *Op) SuggestedTimeout() time.Duration {
	dist := o.estimate(time.Now())
	if dist == nil {
		return 3 * o.Prior
	}
	return 3 * dist.p99
}
