package budget

import (
	"context"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Admission defaults, stated in [Op]'s field docs.
const (
	defaultThreshold  = 0.5
	defaultProbeEvery = 100 * time.Millisecond
	defaultThrottle   = 2.0
	// minThrottle is the least K error-rate throttling uses (see
	// classThrottle).
	minThrottle = 1.25
	// minProbeGap is the shortest interval between probes: the first probe
	// goes this soon after refusals begin (or the op's probe floor, if
	// longer), and the interval doubles after each probe that fails.
	minProbeGap = 10 * time.Millisecond
	// rampStart is the share of otherwise refused calls (in 1/rampFull)
	// readmitted after the first probe that succeeds; the next success
	// makes it full, and a full share resets the op.
	rampStart = 896
	rampFull  = 1024
	// maxProbeScale bounds how often a probe's time doubles after probes
	// that failed: to 64 times the probe floor, and never past the time
	// the call has.
	maxProbeScale = 6
	// maxProbeEvery bounds how many refusals a probe waits for: the count
	// doubles after each probe that fails, so an op called a few times a
	// second probes a dead dependency on ever fewer of its calls.
	maxProbeEvery = 16
	// probeWait is how many ProbeEvery intervals a probe waits at most for
	// its count of refusals.
	probeWait = 5
	// stallCalls is how many attempts must have started since the last
	// success, with none succeeding for stallFactor times the usual
	// latency, before the op treats the dependency as stalled.
	stallCalls  = 5
	stallFactor = 4
	// throttleMin is how many requests the throttling windows must have
	// seen before throttling may refuse anything: one failure in a row is
	// not a failing dependency.
	throttleMin = 10
)

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
	// Probability is the estimated chance of finishing within Available;
	// 1 when the samples say nothing about that much time and the prior
	// admits.
	Probability float64
	// Measured reports whether the decision came from measurements rather
	// than the prior.
	Measured bool
	// Cap bounds the admitted attempt on top of Available: the op's Cap,
	// or for a probe the time a probe needs to tell (see [Op]) when that
	// is less. Zero means no bound but Available.
	Cap time.Duration
	// Criticality is the class the attempt was judged as (see [Op]).
	Criticality Criticality
	// Shed reports a refusal for the attempt's class under load: its
	// class's share of the op's Limit was taken, or it is sheddable and
	// only the headroom sheddable work must keep refused it.
	Shed bool

	throttled bool // refused by error-rate throttling, not for lack of time
}

// admissionState is what an [Op] keeps between calls, besides its
// estimator. Every time is a monotonic offset (see mono).
type admissionState struct {
	good       atomic.Int64  // moving average of the latency of successful attempts, ns; 0 before the first
	sinceOK    atomic.Int32  // attempts started since the last success
	firstSince atomic.Int64  // offset when the first of those started
	lastStart  atomic.Int64  // offset when an attempt last started (to the millisecond)
	lastProbe  atomic.Int64  // offset of the last probe admitted; 0 while the op is not refusing
	gap        atomic.Int64  // current interval between probes, ns; 0 means the shortest
	share      atomic.Uint32 // share of otherwise refused calls readmitted, in 1/rampFull
	refused    atomic.Int32  // calls refused since the last probe
	every      atomic.Int32  // refusals a probe waits for; 0 means 1
	scale      atomic.Int32  // doublings of a probe's time after probes that failed
	okProbe    atomic.Int64  // offset when the latest probe that succeeded started
	forwarded  atomic.Int64  // offset of the last call admitted as a probe its caller sent
	fed        atomic.Int64  // offset of the last attempt of a class above Sheddable admitted
	inflight   atomic.Int64  // attempts started and not ended
	learned    learnedLimit  // the limit learned from refusals while Limit is 0
	throttle   [2]throttleSlot
	regime     regimeMarks
}

// throttleSlot counts attempts and successes over one throttling window, in
// one word (requests in the high 32 bits, accepts in the low 32) so that an
// attempt costs one atomic add.
type throttleSlot struct {
	epoch  atomic.Int64
	counts atomic.Uint64
}

const (
	oneRequest = 1 << 32
	oneAccept  = 1
)

// Ask is an attempt as an [Op]'s admission sees it: the time it could
// use, its class and whether its caller sent it as a probe. [Op.Admit]
// reads it from a context; [Op.AdmitAt] and [Op.BeginAt] take it as it is,
// for attempts run on a clock of the caller's. It is a plain value; the
// zero Ask is an attempt of the default class with no time at all.
type Ask struct {
	// Available is the time the attempt could use: its remaining time less
	// the reserve, as [Reading.Available] states it. A value of
	// time.Duration(math.MaxInt64) stands for no deadline at all.
	Available time.Duration
	// Criticality is the attempt's class (see [Op]); a value outside the
	// three classes is taken as the nearest one.
	Criticality Criticality
	// Probe reports that the attempt's caller sends it to find out whether
	// the dependency has recovered: an op upstream admitted the call as a
	// probe ([IsProbe]). See [Op] for how an op admits it.
	Probe bool
}

// Admit reports whether an attempt should start now in ctx's budget: the
// time available is ctx's remaining time less its reserve, and the attempt's
// class and probe mark are ctx's ([CriticalityFrom], [IsProbe]). It is
// [Op.AdmitAt] at the present time; it does not look at Limit. It records
// nothing and takes no probe slot, so tools and pages may call it freely. It
// reads the clock once and allocates nothing.
func (o *Op) Admit(ctx context.Context) Admission {
	if o == nil {
		return Admission{} // a nil op admits nothing, as its Do runs nothing
	}
	now, remaining, ok := clock(ctx)
	avail := noDeadline
	if ok {
		avail = remaining - stateOf(ctx).reserveOrZero()
	}
	return o.AdmitAt(now, Ask{Available: avail, Criticality: CriticalityFrom(ctx), Probe: IsProbe(ctx)})
}

// AdmitAt reports whether an attempt a should start at now, by the op's
// measurements, its prior and its stall check (Limit, probes and error-rate
// throttling are not looked at). It neither records anything nor takes a
// probe slot: it answers "would the estimate let this through?", as a retry
// asks before it waits for its backoff. It allocates nothing.
func (o *Op) AdmitAt(now time.Time, a Ask) Admission {
	c := clampCriticality(a.Criticality)
	if o == nil {
		return Admission{Available: a.Available, Criticality: c}
	}
	return o.decide(mono(now), a.Available, c)
}

func (o *Op) decide(m int64, available time.Duration, c Criticality) Admission {
	dec := Admission{Available: available, Probability: 1, Admit: true, Cap: max(o.Cap, 0), Criticality: c}
	if available <= 0 || available <= o.MinUseful {
		dec.Admit, dec.Probability = false, 0
		return dec
	}
	if available == noDeadline {
		return dec
	}
	if o.stalled(m) {
		dec.Admit, dec.Probability, dec.Measured = false, 0, true
		return dec
	}
	dist := o.estimate(m)
	switch {
	case dist == nil:
		return o.byPrior(dec, c)
	case !dist.Known(available) && o.Prior > 0 && o.Prior < dist.horizon:
		// The samples say nothing about this much time, but they already
		// show calls running past what the prior promises: not a sure
		// thing, a probe.
		dec.Admit, dec.Probability, dec.Measured, dec.Needed = false, 0, true, dist.horizon
		return dec
	case !dist.Known(available):
		return o.byPrior(dec, c)
	}
	dec.Measured = true
	dec.Probability = dist.CDF(available)
	if o.Safety > 0 {
		median, ok := dist.Quantile(0.5)
		dec.Needed = classNeed(time.Duration(o.Safety*float64(median)), c)
		dec.Admit = ok && available >= dec.Needed
		return dec
	}
	t := classThreshold(o.threshold(), c)
	dec.Admit = dec.Probability >= t
	if !dec.Admit {
		dec.Needed, _ = dist.Quantile(t)
	}
	return dec
}

// byPrior decides by the prior alone: before the op has measurements, or
// for a caller with more time than any that was cut off.
func (o *Op) byPrior(dec Admission, c Criticality) Admission {
	if o.Prior <= 0 {
		return dec
	}
	dec.Needed = o.Prior
	if o.Safety > 0 {
		dec.Needed = time.Duration(o.Safety * float64(o.Prior))
	}
	dec.Needed = classNeed(dec.Needed, c)
	if dec.Available < dec.Needed {
		dec.Admit, dec.Probability = false, 0
	}
	return dec
}

// estimate returns the distribution admission uses at m, or nil while the op
// has fewer than MinSamples samples and its prior applies.
func (o *Op) estimate(m int64) *Distribution {
	dist := o.Estimator.distribution(m, o.minSamples())
	if dist.n < o.minSamples() {
		return nil
	}
	return dist
}

// stalled reports whether attempts keep starting and none succeeds: at
// least stallCalls have started since the last success, and the first of
// them has been running for stallFactor times the usual latency with no
// success since. A dependency that hangs is refused this way before the
// first attempt has been cut off, which a latency estimate can only learn
// once attempts end. Counting from the first unanswered attempt, not from
// the last success, keeps a burst after a quiet spell from looking stalled.
// An attempt that failed on its own (a fast error) is not counted: the
// dependency answered, and error-rate throttling deals with it. The
// evidence lasts one estimator window after the last attempt started: an
// op that refuses everything on it would otherwise never start the attempt
// that shows the stall is over (probes, while on, start such attempts).
func (o *Op) stalled(m int64) bool {
	good := o.adm.good.Load()
	return good > 0 && o.adm.sinceOK.Load() >= stallCalls &&
		m-o.adm.firstSince.Load() > stallFactor*max(good, int64(time.Millisecond)) &&
		m-o.adm.lastStart.Load() <= o.Estimator.window()
}

// started records that an attempt started at offset m.
func (o *Op) started(m int64) {
	if o.adm.sinceOK.Add(1) == 1 {
		o.adm.firstSince.Store(m)
	}
	if m-o.adm.lastStart.Load() > int64(time.Millisecond) {
		o.adm.lastStart.Store(m)
	}
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

// admit is decide plus the class's share of Limit (or of the limit learned
// from refusals), the probes and the error-rate throttle: what an attempt
// of the op goes through before it starts. An admitted attempt holds a slot
// until it ends.
func (o *Op) admit(m int64, a Ask, c Criticality) Admission {
	limit := o.limitAt(m)
	if limit > 0 && o.adm.inflight.Load() >= classLimit(limit, c) {
		o.adm.regime.note(regimeShed, m, o.Estimator.window())
		return Admission{Available: a.Available, Cap: max(o.Cap, 0), Criticality: c, Shed: true}
	}
	dec := o.probeOrThrottle(m, a.Available, c, o.decide(m, a.Available, c))
	if !dec.Admit && a.Probe {
		dec = o.forward(m, a.Available, dec)
	}
	if dec.Admit && !o.take(limit, c) {
		dec.Admit, dec.Probe, dec.Shed = false, false, true
	}
	switch {
	case dec.Admit:
		if c > Sheddable && m-o.adm.fed.Load() > int64(time.Millisecond) {
			o.adm.fed.Store(m) // a class that feeds the estimate is calling
		}
	case dec.throttled:
		o.adm.regime.note(regimeThrottle, m, o.Estimator.window())
	case dec.Shed:
		o.adm.regime.note(regimeShed, m, o.Estimator.window())
	case dec.Measured:
		o.adm.regime.note(regimeRefuse, m, o.Estimator.window())
	}
	return dec
}

// probeOrThrottle completes decide's verdict dec: an admitted attempt may
// still be throttled for the op's error rate, and one refused on
// measurements, or throttled, may go as a probe. A sheddable attempt that a
// default one would pass is refused for its class: the dependency is not
// refusing calls, it is short of the headroom sheddable work keeps. It goes
// as a probe only when no call of a higher class has been admitted for a
// window: then nothing else would ever bring the estimate up to date.
func (o *Op) probeOrThrottle(m int64, available time.Duration, c Criticality, dec Admission) Admission {
	switch {
	case dec.Admit:
		if !o.throttled(m, c) {
			return dec
		}
		dec.Admit, dec.throttled = false, true
	case c < DefaultCriticality && o.decide(m, available, DefaultCriticality).Admit:
		dec.Shed = true
		if m-o.adm.fed.Load() <= o.Estimator.window() {
			return dec // the other classes keep the estimate current
		}
	case !dec.Measured:
		return dec
	}
	if o.ProbeEvery < 0 {
		return dec
	}
	// Refused on measurements: a probe may go, but only to a call with
	// enough time to show that the dependency is back.
	floor := o.probeFloor()
	if available < floor {
		return dec
	}
	if s := o.adm.share.Load(); s > 0 && o.randN(rampFull) < s {
		o.adm.regime.readmitted(m)
		return o.asProbe(dec, o.probeCap(floor, available))
	}
	last := o.adm.lastProbe.Load()
	if last == 0 {
		// The first refusal starts the probe interval.
		o.adm.lastProbe.CompareAndSwap(0, m)
		return dec
	}
	// A probe waits for its count of refusals; a probe capped at the probe
	// floor, which costs twice the usual latency and no more, waits
	// probeWait intervals at most, so that an op called a few times a
	// second sees a recovery within a bound. An op that knows nothing of
	// the dependency's latency sends uncapped probes, and keeps the count.
	if o.adm.refused.Add(1) < max(o.adm.every.Load(), 1) && (floor == 0 || m-last < probeWait*o.probeEvery()) {
		return dec
	}
	if m-last >= o.probeGap() && o.adm.lastProbe.CompareAndSwap(last, m) {
		o.adm.refused.Store(0)
		return o.asProbe(dec, o.probeCap(floor, available))
	}
	return dec
}

// forward admits, as a probe of this op, a call its caller sent as a probe
// and this op refused: whatever the estimate, the class or the throttle
// say, with whatever time the call has (capped as the op's own probes
// are), so that a probe sent from the top of a chain reaches the
// dependency that failed, through hops whose estimates are as stale as
// its sender's. Beside the share a recovering op
// readmits, one such call goes every minProbeGap at most, so callers that
// mark every call as a probe get no more than that through.
func (o *Op) forward(m int64, available time.Duration, dec Admission) Admission {
	if available <= 0 || o.ProbeEvery < 0 {
		return dec
	}
	// Capped as the op's own probes are, once it knows the dependency's
	// latency: a caller that marks calls with a 30-day budget as probes
	// gets no more of the dependency than a probe needs. But not halved
	// again: the sender kept half of its caller's time for its fallback
	// already, and each hop halving what it forwards left a five-hop chain's
	// leaf too little time to answer a probe ever again.
	limit := time.Duration(0)
	if floor := o.probeFloor(); floor > 0 {
		limit = o.probeScaled(floor)
	}
	if s := o.adm.share.Load(); s > 0 && o.randN(rampFull) < s {
		o.adm.regime.readmitted(m)
		return o.asProbe(dec, limit)
	}
	last := o.adm.forwarded.Load()
	if m-last < int64(minProbeGap) || !o.adm.forwarded.CompareAndSwap(last, m) {
		return dec
	}
	return o.asProbe(dec, limit)
}

// asProbe admits dec as a probe, capped at limit, the time a probe needs
// (zero: no bound but the op's Cap and the time available).
func (o *Op) asProbe(dec Admission, limit time.Duration) Admission {
	dec.Admit, dec.Probe, dec.Shed, dec.throttled = true, true, false, false
	if limit > 0 && (dec.Cap == 0 || limit < dec.Cap) {
		dec.Cap = limit
	}
	return dec
}

// probeCap is the time an op's own probe gets: twice the usual latency (and
// at least the probe floor), doubled after each probe that failed, up to
// maxProbeScale times but never past half the time the call has, so that
// a probe of a dependency that is still slow costs little, and leaves the
// caller time for its fallback, while one that answers, but slower than
// twice what the op knew of it (the margins each hop below takes, a cold
// cache), is reached within a few tries instead of being cut off by every
// probe for ever.
func (o *Op) probeCap(floor, available time.Duration) time.Duration {
	return min(o.probeScaled(floor), max(2*o.usual(), floor, available/2))
}

// probeScaled is twice the usual latency (at least floor) doubled after each
// probe that failed, up to maxProbeScale times: the time a probe forwarded
// by its caller gets, and the most an op's own probe gets.
func (o *Op) probeScaled(floor time.Duration) time.Duration {
	return max(2*o.usual(), floor) << min(max(o.adm.scale.Load(), 0), maxProbeScale)
}

// randN returns a random number in [0, n) from the op's Rand, or from the
// global source when it has none.
func (o *Op) randN(n uint32) uint32 {
	if o.Rand == nil {
		return rand.Uint32N(n)
	}
	return uint32((o.Rand.Uint64() >> 32) * uint64(n) >> 32)
}

// randFloat returns a random number in [0, 1) from the op's Rand, or from
// the global source when it has none.
func (o *Op) randFloat() float64 {
	if o.Rand == nil {
		return rand.Float64()
	}
	return float64(o.Rand.Uint64()>>11) / (1 << 53)
}

// usual is the dependency's usual latency as the op knows it: the moving
// average of its successes, or its Prior before the first success; zero
// when it knows nothing. A Prior set longer than the dependency's latency
// thus stops counting once the op has measured one success.
func (o *Op) usual() time.Duration {
	if g := o.adm.good.Load(); g > 0 {
		return time.Duration(g)
	}
	return max(o.Prior, 0)
}

// probeFloor is the least time a call needs to go as a probe: the usual
// latency, and more than MinUseful, so that a call with too little time to
// succeed (a client sending 3 ms deadlines) does not take the probe slot.
// Zero when nothing is known.
func (o *Op) probeFloor() time.Duration {
	u := o.usual()
	if u <= 0 {
		return 0
	}
	return max(u, o.MinUseful+1)
}

// probeEvery is ProbeEvery in nanoseconds, or its default.
func (o *Op) probeEvery() int64 {
	if o.ProbeEvery > 0 {
		return int64(o.ProbeEvery)
	}
	return int64(defaultProbeEvery)
}

// probeGap returns the interval before the next probe.
func (o *Op) probeGap() int64 {
	if g := o.adm.gap.Load(); g > 0 {
		return g
	}
	return int64(max(minProbeGap, o.usual()))
}

// probed learns from the end of a probe: a success readmits a share of the
// refused calls, doubling with each further success until the op takes the
// dependency as recovered; a probe that ran its course and failed halves nothing but stops
// the ramp, doubles the interval to the next probe, up to ProbeEvery, and
// doubles the time the next probe gets (probeCap). A
// probe the caller abandoned says nothing about the dependency and only
// frees the probe slot.
func (o *Op) probed(start, m int64, outcome Outcome) {
	a := &o.adm
	switch outcome {
	case OutcomeOK:
		if start > a.okProbe.Load() {
			a.okProbe.Store(start)
		}
		a.gap.Store(0)
		a.every.Store(0)
		// The probe's time stays as it is: it was enough, and the next
		// probe needs as much (the hops below take their margins from it).
		s := a.share.Load()
		next := max(2*s, rampStart)
		if next >= rampFull {
			o.recovered()
			a.regime.calm.Store(m)
			return
		}
		if a.share.CompareAndSwap(s, next) && s == 0 {
			a.regime.ramp.Store(m)
		}
		a.lastProbe.Store(m - o.probeGap()) // the next refusal may probe at once
	case OutcomeCanceled:
		a.lastProbe.Store(m - o.probeGap())
	default:
		if start < a.okProbe.Load() {
			// A probe sent before one that has since succeeded tells
			// nothing new: its dependency was still failing when it left.
			return
		}
		a.share.Store(0)
		a.gap.Store(min(2*o.probeGap(), max(o.probeEvery(), int64(minProbeGap))))
		a.every.Store(min(2*max(a.every.Load(), 1), maxProbeEvery))
		if sc := a.scale.Load(); sc < maxProbeScale {
			a.scale.CompareAndSwap(sc, sc+1)
		}
	}
}

// learn updates the admission state with the end of an attempt that started
// at offset start and ended at offset end.
func (o *Op) learn(start, end int64, outcome Outcome, probe bool) {
	a := &o.adm
	// A probe that succeeded, but slower than twice the usual latency, shows
	// a dependency that answers slowly, not one that has recovered: it is a
	// sample the estimate admits callers on, not a step of the ramp.
	slow := probe && outcome == OutcomeOK && o.usual() > 0 && end-start > 2*int64(o.usual())
	if outcome == OutcomeOK {
		// A moving average of successes; a change under 1/128 of it is not
		// stored, so steady latency costs loads, not stores.
		d := end - start
		if g := a.good.Load(); g == 0 {
			a.good.Store(d)
		} else if step := (d - g) / 8; step > g/128 || -step > g/128 {
			a.good.Store(g + step)
		}
		if a.sinceOK.Load() != 0 {
			a.sinceOK.Store(0)
		}
	}
	if outcome == OutcomeFailed {
		if n := a.sinceOK.Load(); n > 0 {
			a.sinceOK.CompareAndSwap(n, n-1) // it answered: not a stall
		}
	}
	switch {
	case slow:
		o.probed(start, end, OutcomeExpired)
	case probe:
		o.probed(start, end, outcome)
	}
	if o.Throttle >= 0 {
		slot := o.throttleSlot(end)
		if outcome != OutcomeFailed {
			slot.counts.Add(oneRequest | oneAccept)
		} else {
			slot.counts.Add(oneRequest)
		}
	}
}

// Reset forgets everything the op has measured: its estimator's samples,
// its probe state, the counts error-rate throttling keeps and the limit it
// learned from refusals. Admission then follows Prior until it has learned
// again. An op that probes show has a recovered dependency forgets less:
// its cut-off samples, not the latencies it measured.
func (o *Op) Reset() {
	if o == nil {
		return
	}
	o.Estimator.Reset()
	o.forgetFault()
	o.adm.learned.limit.Store(0)
}

// recovered is what an op does once probes show its dependency is back: it
// forgets the evidence of the fault, not what it knows of the dependency's
// latency. The cut-off samples (the outage's "at least this long") go, and
// so do the probe state and the throttle's counts; the completed samples
// stay, so that an op whose prior alone would refuse its callers (a Prior
// set longer than the latency) keeps admitting them on what it measured.
// Completed samples from a slow spell age out with their windows.
func (o *Op) recovered() {
	o.Estimator.forgetCensored()
	o.forgetFault()
}

// forgetFault clears the probe, stall, throttling and regime state.
func (o *Op) forgetFault() {
	a := &o.adm
	a.sinceOK.Store(0)
	a.lastProbe.Store(0)
	a.gap.Store(0)
	a.share.Store(0)
	a.refused.Store(0)
	a.every.Store(0)
	a.scale.Store(0)
	for i := range a.throttle {
		a.throttle[i].counts.Store(0)
	}
	a.regime.clear()
}

// throttleWindow returns the length of each of the two windows over which
// error-rate throttling counts attempts: ten estimator windows (10 s by
// default), long enough to see a rate, short enough to follow a recovery.
func (o *Op) throttleWindow() int64 { return 10 * o.Estimator.window() }

// throttleSlot returns the slot counting attempts at offset m, turned to m's
// window if it held an older one.
func (o *Op) throttleSlot(m int64) *throttleSlot {
	w := o.throttleWindow()
	ep := floorDiv(m, w)
	slot := &o.adm.throttle[ep&1]
	if cur := slot.epoch.Load(); cur != ep && cur < ep && slot.epoch.CompareAndSwap(cur, ep) {
		slot.counts.Store(0)
	}
	return slot
}

// throttled applies client-side adaptive throttling (the SRE book, chapter
// 21): over the last throttle window, refuse locally with probability
// max(0, (requests − K·accepts) / (requests + 1)), where accepts are
// attempts that did not fail, once at least throttleMin requests were seen.
// A refused request counts as a request, so a dependency that fails every
// call still gets a trickle.
func (o *Op) throttled(m int64, c Criticality) bool {
	if o.Throttle < 0 {
		return false
	}
	k := o.Throttle
	if k == 0 {
		k = defaultThrottle
	}
	k = classThrottle(k, c)
	w := o.throttleWindow()
	ep := floorDiv(m, w)
	var req, acc float64
	for i := range o.adm.throttle {
		s := &o.adm.throttle[i]
		if e := s.epoch.Load(); e == ep || e == ep-1 {
			c := s.counts.Load()
			req += float64(c >> 32)
			acc += float64(c & (oneRequest - 1))
		}
	}
	p := (req - k*acc) / (req + 1)
	if req < throttleMin || p <= 0 || math.IsNaN(p) {
		return false
	}
	if o.randFloat() >= p {
		return false
	}
	o.throttleSlot(m).counts.Add(oneRequest)
	return true
}

// need returns the time the op needs as the last rung of a ladder, the
// time to hold back for it from every earlier stage: a high quantile (the
// 0.99 of its measurements, or its Prior before it has enough of them),
// plus scheduling slack of a quarter of that and at least 2 ms, and always
// more than its MinUseful.
// Never a median of microseconds: a cache that answers in 5 µs still needs
// the goroutine that runs it to be scheduled.
func (o *Op) need(now time.Time) time.Duration {
	est := o.Prior
	if dist := o.estimate(mono(now)); dist != nil {
		est, _ = dist.Quantile(0.99) // past what was seen: the longest bound
	}
	return max(est+max(est/4, 2*time.Millisecond), o.MinUseful+1)
}

// SuggestedTimeout returns a per-call timeout derived from measurements: three
// times the observed p99, the rule of thumb of "a small multiple of p99". With
// too few samples it is three times Prior, or zero when there is no prior.
func (o *Op) SuggestedTimeout() time.Duration {
	if o == nil {
		return 0
	}
	dist := o.estimate(mono(time.Now()))
	if dist == nil {
		return 3 * o.Prior
	}
	return 3 * dist.p99
}
