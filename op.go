package budget

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"
)

// DefaultThreshold is the probability of finishing in time that an [Op] with a
// zero Threshold requires before it starts an attempt.
//
// One half means "more likely to finish than not". An attempt less likely than
// that to finish spends, in expectation, more of the budget on a timeout than
// on an answer, and that time is what a cheaper fallback needs. Ops with no
// fallback behind them should set a lower threshold (or use the Safety rule):
// there, a small chance is better than a certain refusal.
const DefaultThreshold = 0.5

// DefaultMinSamples is how many samples an [Op] with a zero MinSamples needs
// before it trusts its measurements over its Prior.
const DefaultMinSamples = 20

// DefaultProbeEvery is the interval between probe attempts of an [Op] with a
// zero ProbeEvery while its estimate refuses every call.
const DefaultProbeEvery = 500 * time.Millisecond

// probeWinsToReset is how many probes in a row must succeed inside the time
// the estimate called insufficient before the estimate is discarded.
const probeWinsToReset = 3

// noDeadline stands for the time available when a context has no deadline.
const noDeadline = time.Duration(math.MaxInt64)

// Op is one named dependency call, such as "geometry" or "pricing". It
// measures the call's latency and admits an attempt only when the attempt can
// finish in the time available. Create one per dependency and share it: the
// measurements are what make its admission decisions good.
//
// The zero value (with a Name) is usable: it admits every attempt until it
// has DefaultMinSamples measurements, then requires a DefaultThreshold chance
// of finishing. An Op must not be copied after first use and is safe for
// concurrent use.
type Op struct {
	// Name identifies the dependency in the ledger, errors and metrics.
	Name string

	// Cap is the local limit on one attempt, applied on top of the budget:
	// an attempt's deadline is min(now+Cap, deadline-reserve). Zero means no
	// local limit: the budget alone bounds the attempt.
	Cap time.Duration

	// MinUseful is the least time worth starting an attempt with; when the
	// time available is at or below it the attempt is refused whatever the
	// estimate says. Zero refuses only when nothing is left.
	MinUseful time.Duration

	// Threshold is the estimated probability of finishing in time required to
	// admit an attempt, in (0, 1]. Zero means DefaultThreshold.
	Threshold float64

	// Safety, when positive, replaces the probability rule with the simpler
	// rule "admit when available >= Safety × median latency". A Safety of 0.5
	// declines only attempts that are very unlikely to finish.
	Safety float64

	// Prior is the typical latency assumed until MinSamples measurements
	// exist: an attempt is admitted when the time available covers it (or
	// Safety × Prior under the Safety rule). Zero admits every attempt until
	// there are measurements.
	Prior time.Duration

	// MinSamples is how many samples the estimator needs before its estimate
	// replaces Prior. Zero means DefaultMinSamples.
	MinSamples int

	// ProbeEvery bounds the trickle of probe attempts let through while the
	// estimate refuses calls that would otherwise have enough time: at most
	// one per ProbeEvery. A probe that succeeds inside the time the estimate
	// called insufficient lets the next one go at once, and three in a row
	// reset the op (see [Op.Reset]), so a recovered dependency is used again
	// within a few of its own latencies, as a circuit breaker's half-open
	// trial calls allow. Zero means DefaultProbeEvery; a negative value
	// disables probes (the op then follows the last estimate it learned).
	ProbeEvery time.Duration

	// Observer, when not nil, receives this op's events in addition to the
	// budget's own observer.
	Observer Observer

	// Estimator holds the op's latency measurements. Its Window may be set
	// before first use.
	Estimator Estimator

	learned   atomic.Pointer[Distribution] // the last estimate with MinSamples samples
	lastProbe atomic.Int64                 // unix ns of the last probe admitted
	probeWins atomic.Int32                 // consecutive probes that succeeded
	lastWin   atomic.Int64                 // unix ns at which the last successful probe started
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

// Reset forgets everything the op has measured: its estimator's samples and
// the estimate in force. Admission then follows Prior until it has learned
// again. An op resets itself when probes show a recovered dependency.
func (o *Op) Reset() {
	o.Estimator.Reset()
	o.learned.Store(nil)
	o.probeWins.Store(0)
}

// Decision is the outcome of an admission check.
type Decision struct {
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

func (o *Op) minSamples() int {
	if o.MinSamples > 0 {
		return o.MinSamples
	}
	return DefaultMinSamples
}

func (o *Op) threshold() float64 {
	if o.Threshold > 0 && o.Threshold <= 1 {
		return o.Threshold
	}
	return DefaultThreshold
}

// Decide reports whether an attempt with available time left (remaining less
// reserve) should start at now. It neither records anything nor takes a probe
// slot, so tools and pages may call it freely. It allocates nothing.
func (o *Op) Decide(now time.Time, available time.Duration) Decision {
	dec := Decision{Available: available, Probability: 1, Admit: true}
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

// Admit reports whether an attempt should start now in ctx's budget: the time
// available is ctx's remaining time less its reserve. Like [Op.Decide] it
// records nothing and takes no probe slot. It reads the clock once and
// allocates nothing.
func (o *Op) Admit(ctx context.Context) Decision {
	now, remaining, ok := clock(ctx)
	avail := noDeadline
	if ok {
		avail = remaining - stateOf(ctx).reserveOrZero()
	}
	return o.Decide(now, avail)
}

// clock returns the time now and, when ctx has a deadline, the time left
// before it, with a single clock reading: a monotonic one when there is a
// deadline (about half the cost of time.Now on some virtual machines), from
// which now is derived.
func clock(ctx context.Context) (now time.Time, remaining time.Duration, ok bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return time.Now(), 0, false
	}
	remaining = time.Until(dl)
	return dl.Add(-remaining), remaining, true
}

// admit is Decide plus the probe trickle.
func (o *Op) admit(now time.Time, available time.Duration) Decision {
	dec := o.Decide(now, available)
	if dec.Admit || available <= 0 || available <= o.MinUseful || o.ProbeEvery < 0 {
		return dec
	}
	every := o.ProbeEvery
	if every == 0 {
		every = DefaultProbeEvery
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

// Do runs fn as one attempt of this op within ctx's budget. It first asks
// whether the attempt can finish in the time available (remaining less
// reserve); when it cannot, fn is not called and Do returns an [*Error] that
// matches [ErrInsufficient]. Otherwise fn runs with a context whose deadline
// is min(now+Cap, deadline-reserve), so the dependency receives the time
// remaining, never a constant. The attempt's latency is recorded: completed
// calls as samples, timed-out calls as censored samples; calls that failed
// for other reasons are not latency samples and are not recorded.
//
// When the attempt runs out of time, Do returns an [*Error] that matches
// [context.DeadlineExceeded] and wraps fn's error; so does an error from fn
// that itself matches [context.DeadlineExceeded] (the callee ran out of the
// budget it was sent), and both count as timed-out samples. Other errors from
// fn are returned as they are. Every decision and attempt goes to the ledger and the
// observers.
func (o *Op) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if o == nil || fn == nil {
		return misconfigured("Op.Do needs an Op and a function")
	}
	return o.attempt(ctx, 0, fn)
}

// Call is [Op.Do] for a function that returns a value.
func Call[T any](ctx context.Context, o *Op, fn func(ctx context.Context) (T, error)) (T, error) {
	var v T
	if o == nil || fn == nil {
		return v, misconfigured("Call needs an Op and a function")
	}
	err := o.attempt(ctx, 0, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	})
	return v, err
}

// attempt runs one admitted attempt; n numbers it within a retry loop.
func (o *Op) attempt(ctx context.Context, n int, fn func(ctx context.Context) error) error {
	return o.run(ctx, n, false, fn)
}

// run runs one attempt. With lastChance, the estimate is not consulted: the
// attempt starts whenever more than MinUseful is left, because nothing
// cheaper comes after it (the last rung of a ladder).
func (o *Op) run(ctx context.Context, n int, lastChance bool, fn func(ctx context.Context) error) error {
	now, left, hasDeadline := clock(ctx)
	st := stateOf(ctx)
	if err := ctx.Err(); err != nil {
		return ended(ctx, st, o.Observer, o.Name, now, n, err)
	}
	remaining, available := noDeadline, noDeadline
	if hasDeadline {
		remaining = left
		available = remaining - st.reserveOrZero()
	}
	shownRemaining := remaining
	if remaining == noDeadline {
		shownRemaining = 0
	}
	var dec Decision
	if lastChance {
		dec = Decision{Available: available, Probability: 1, Admit: available > 0 && available > o.MinUseful}
	} else {
		dec = o.admit(now, available)
	}
	if !dec.Admit {
		err := &Error{Stage: o.Name, Kind: Insufficient, Remaining: available, Needed: dec.Needed, Budget: st.budget()}
		emit(ctx, st, o.Observer, Event{Kind: EventRefuse, Stage: o.Name, At: now, Remaining: shownRemaining,
			Needed: dec.Needed, Outcome: "insufficient", Attempt: n, Err: err})
		return err
	}
	admitOutcome := ""
	if dec.Probe {
		admitOutcome = "probe"
	}
	emit(ctx, st, o.Observer, Event{Kind: EventAdmit, Stage: o.Name, At: now, Remaining: shownRemaining,
		Needed: dec.Needed, Outcome: admitOutcome, Attempt: n})

	limit, cause := available, ErrBudgetExpired
	if o.Cap > 0 && o.Cap < limit {
		limit, cause = o.Cap, ErrAttemptCap
	}
	var actx context.Context
	var cancel context.CancelFunc
	if limit == noDeadline {
		actx, cancel = context.WithCancel(ctx)
	} else {
		actx, cancel = context.WithDeadlineCause(ctx, now.Add(limit), cause)
	}
	err := fn(actx)
	end := time.Now()
	elapsed := end.Sub(now)
	outcome := OutcomeOK
	switch {
	case err == nil:
	case actx.Err() != nil && errors.Is(context.Cause(actx), context.DeadlineExceeded):
		outcome = OutcomeTimeout
	case actx.Err() != nil:
		outcome = OutcomeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		// The callee ran out of the budget we sent it (an upstream 504 with
		// Budget-Expired, a gRPC DEADLINE_EXCEEDED) a moment before our own
		// deadline: the call took at least this long.
		outcome = OutcomeTimeout
	default:
		outcome = OutcomeError
	}
	cancel()
	switch outcome {
	case OutcomeOK:
		o.Estimator.RecordAt(end, elapsed)
	case OutcomeTimeout:
		o.Estimator.RecordCensoredAt(end, elapsed)
	}
	if dec.Probe {
		o.probed(now, outcome == OutcomeOK)
	}
	emit(ctx, st, o.Observer, Event{Kind: EventAttempt, Stage: o.Name, At: now, Duration: elapsed,
		Remaining: shownRemaining, Outcome: outcome, Attempt: n, Err: err})
	if outcome == OutcomeTimeout {
		return &Error{Stage: o.Name, Kind: Expired, Remaining: available - elapsed, Budget: st.budget(), Err: err}
	}
	return err
}

// ended reports work of stage that could not start because ctx was already
// done: an expiry when its deadline passed, ctx's own error otherwise.
func ended(ctx context.Context, st *state, extra Observer, stage string, now time.Time, n int, err error) error {
	if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return err
	}
	e := &Error{Stage: stage, Kind: Expired, Budget: st.budget(), Err: err}
	if dl, ok := ctx.Deadline(); ok {
		e.Remaining = dl.Sub(now)
	}
	emit(ctx, st, extra, Event{Kind: EventExpiry, Stage: stage, At: now, Remaining: e.Remaining, Attempt: n, Err: e})
	return e
}

func (st *state) budget() time.Duration {
	if st == nil {
		return 0
	}
	return st.total
}
