package budget

import (
	"context"
	"sync/atomic"
	"time"
)

// Op is one named dependency call, such as "geometry" or "pricing". It
// measures the call's latency and admits an attempt only when the attempt can
// finish in the time available. Create one per dependency and share it: the
// measurements are what make its admission decisions good.
//
// The zero value (with a Name) is usable: it admits every attempt until it
// has 20 measurements, then requires an even chance of finishing. An Op must
// not be copied after first use and is safe for concurrent use.
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
	// admit an attempt, in (0, 1]. Zero means 0.5: "more likely to finish
	// than not". An attempt less likely than that to finish spends, in
	// expectation, more of the budget on a timeout than on an answer, and
	// that time is what a cheaper fallback needs. Ops with no fallback
	// behind them should set a lower threshold (or use the Safety rule):
	// there, a small chance is better than a certain refusal.
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
	// replaces Prior. Zero means 20.
	MinSamples int

	// ProbeEvery bounds the trickle of probe attempts let through while the
	// estimate refuses calls that would otherwise have enough time: at most
	// one per ProbeEvery. A probe that succeeds inside the time the estimate
	// called insufficient lets the next one go at once, and three in a row
	// reset the op (see [Op.Reset]), so a recovered dependency is used again
	// within a few of its own latencies, as a circuit breaker's half-open
	// trial calls allow. Zero means 500 ms; a negative value disables probes
	// (the op then follows the last estimate it learned).
	ProbeEvery time.Duration

	// Observer, when not nil, receives this op's events in addition to the
	// budget's own observer.
	Observer Observer

	// Expired, when not nil, reports whether an error the work returned
	// means it ran out of time although the attempt's context had not
	// ended: a server-side timeout the budget was pushed down into, such as
	// PostgreSQL's statement_timeout (SQLSTATE 57014) or lock_timeout
	// (55P03). Such an attempt is recorded as a cut-off sample, like one
	// the context ended, and [Op.Do] returns an [*Error] that matches
	// [context.DeadlineExceeded] and wraps the error. Errors that already
	// match [context.DeadlineExceeded] need no hook.
	Expired func(err error) bool

	// Estimator holds the op's latency measurements. Its Window may be set
	// before first use.
	Estimator Estimator

	learned   atomic.Pointer[Distribution] // the last estimate with MinSamples samples
	lastProbe atomic.Int64                 // unix ns of the last probe admitted
	probeWins atomic.Int32                 // consecutive probes that succeeded
	lastWin   atomic.Int64                 // unix ns at which the last successful probe started
}

// Reset forgets everything the op has measured: its estimator's samples and
// the estimate in force. Admission then follows Prior until it has learned
// again. An op resets itself when probes show a recovered dependency.
func (o *Op) Reset() {
	o.Estimator.Reset()
	o.learned.Store(nil)
	o.probeWins.Store(0)
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
// fn are returned as they are. Every attempt and refusal goes to the ledger
// and the observers.
//
// Use Do for every call of a dependency; [Attempt] is the lower-level
// building block for work that is not measured.
func (o *Op) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if o == nil || fn == nil {
		return misconfigured("Op.Do needs an Op and a function")
	}
	return o.run(ctx, runOpts{}, fn)
}

// Call is [Op.Do] for a function that returns a value.
func Call[T any](ctx context.Context, o *Op, fn func(ctx context.Context) (T, error)) (T, error) {
	var v T
	if o == nil || fn == nil {
		return v, misconfigured("Call needs an Op and a function")
	}
	err := o.run(ctx, runOpts{}, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	})
	return v, err
}

// runOpts says how an attempt of an op is run by a policy.
type runOpts struct {
	n          int       // the attempt's number within a retry loop or hedge; zero elsewhere
	lastChance bool      // the last rung of a ladder: admitted whenever more than MinUseful is left
	kind       EventKind // the event that records the attempt; zero means EventAttempt
}

// run runs one attempt: admission, then the attempt itself.
func (o *Op) run(ctx context.Context, ro runOpts, fn func(ctx context.Context) error) error {
	r := read(ctx)
	if ctx.Err() != nil {
		return ended(ctx, r, o.Observer, o.Name, ro.n)
	}
	var dec Admission
	if ro.lastChance {
		dec = Admission{Available: r.available, Probability: 1, Admit: r.available > 0 && r.available > o.MinUseful}
	} else {
		dec = o.admit(r.now, r.available)
	}
	if !dec.Admit {
		return refuse(ctx, r, o.Observer, o.Name, ro.n, dec.Needed)
	}
	return o.execute(ctx, r, dec, ro, fn)
}

// execute runs an admitted attempt, records its latency and reports how it
// ended.
func (o *Op) execute(ctx context.Context, r reading, dec Admission, ro runOpts, fn func(ctx context.Context) error) error {
	limit, cause := r.available, ErrExpired
	if o.Cap > 0 && o.Cap < limit {
		limit, cause = o.Cap, ErrAttemptCap
	}
	var actx context.Context
	var cancel context.CancelFunc
	if limit == noDeadline {
		actx, cancel = context.WithCancel(ctx)
	} else {
		actx, cancel = context.WithDeadlineCause(ctx, r.now.Add(limit), cause)
	}
	err := fn(actx)
	end := time.Now()
	elapsed := end.Sub(r.now)
	outcome := classify(actx, err, o.Expired)
	cancel()
	switch outcome {
	case OutcomeOK:
		o.Estimator.RecordAt(end, elapsed)
	case OutcomeExpired:
		o.Estimator.RecordCensoredAt(end, elapsed)
	}
	if dec.Probe {
		o.probed(r.now, outcome == OutcomeOK)
	}
	kind := ro.kind
	if kind == 0 {
		kind = EventAttempt
	}
	emit(ctx, r.st, o.Observer, Event{Kind: kind, Stage: o.Name, At: r.now, Duration: elapsed,
		Remaining: r.remaining, Needed: dec.Needed, Outcome: outcome, Attempt: ro.n, Probe: dec.Probe, Err: err})
	if outcome == OutcomeExpired {
		return &Error{Stage: o.Name, Outcome: OutcomeExpired, Remaining: r.available - elapsed, Budget: r.st.budget(), Err: err}
	}
	return err
}
