package budget

import (
	"context"
	"math/rand/v2"
	"time"
)

// Op is one named dependency call, such as "geometry" or "pricing". It
// measures the call's latency and admits an attempt only when the attempt can
// finish in the time available. Create one per dependency and share it: the
// measurements are what make its admission decisions good.
//
// The zero value (with a Name) is usable: it admits every attempt until it
// has 5 measurements, then requires an even chance of finishing. An Op must
// not be copied after first use and is safe for concurrent use. A nil *Op
// runs nothing: Do returns an error matching [ErrMisconfigured], Admit,
// AdmitAt and BeginAt refuse, EndAt records nothing, and SuggestedTimeout
// is zero.
//
// How an Op learns, with the numbers of the zero value:
//
//   - The estimate covers the last second (two rotating one-second windows
//     of the [Estimator]), so at 10,000 calls a second it follows a shift
//     within about a second. When the windows hold fewer than MinSamples
//     samples, the estimate is built from the latest MinSamples samples
//     recorded within the last 30 seconds, so an op called three times a
//     second refuses a hanging dependency after about five calls, not
//     never, and an estimate learned during an outage governs a quiet op
//     for 30 seconds at most.
//   - A call cut off at t (its deadline, or a server-side timeout the
//     Expired hook recognizes) is a censored sample: it lowers the chance
//     of finishing within T only for T up to t. A caller with more time
//     than any that was cut off is decided by the prior (admitted when
//     there is none), so callers sending 3 ms deadlines can refuse only
//     callers like themselves; but when the cut-offs already lie past the
//     prior, such a caller goes only as a probe.
//   - When at least 5 attempts have started since the last success and
//     the first of them has run for 4 times the usual latency (a moving
//     average of successes) with no success since, the dependency is taken
//     as stalled and refused before the first attempt is even cut off.
//   - While the op refuses calls on its measurements, or throttles them,
//     probes keep it learning. A probe goes only to a call with at least
//     the usual latency left (the moving average of successes, or the
//     prior before the first), and is capped at twice that, so a probe of
//     a dependency still slow costs little; after each probe that fails
//     the cap doubles (up to 64 times, never past half the time the call
//     has), so a dependency that answers slower than before is still
//     reached and the caller keeps time for its fallback. A probe a caller
//     forwards (see [WithProbe]) is capped the same way but not halved
//     again: its sender kept its fallback's time already, and halving at
//     every hop would leave the last hop of a long chain too little time.
//     The first probe goes 10 ms (or
//     the usual latency) after refusals begin; after each probe that
//     fails, the interval doubles, up to ProbeEvery, and so does the
//     number of refused calls a probe waits for, up to 16, but never for
//     longer than 5 × ProbeEvery (500 ms by default) once a probe's cost is
//     bounded by its cap. A probe the caller abandons says nothing. A probe
//     that succeeds readmits 7/8 of the refused calls, and the next success
//     all of them, as a circuit breaker's half-open trials close it: the op
//     forgets what the fault taught it (its cut-off samples and its
//     throttling counts) and keeps the latencies it measured.
//   - A probe is a probe end to end. The context of an attempt admitted
//     as a probe is marked ([WithProbe]); the transport adapters carry the
//     mark to the next hop, and an op there admits a marked call that it
//     would refuse, for its estimate, its class or its throttle, as a
//     probe of its own, with whatever time the call has (one every 10 ms
//     at most, beside the share a recovering op readmits). So an edge
//     whose probes carry 2 × its Prior reaches a database behind a backend
//     whose Prior is longer, and a chain recovers from the top, whatever
//     Priors its hops were given. DESIGN.md states the bound.
//   - With no Limit, a dependency that refuses calls on arrival teaches
//     the op a concurrency limit, which it lets go of one window (a
//     second) after the last refusal (see Limit).
//   - Beside latency, calls are refused at random when the dependency
//     fails (client-side adaptive throttling, the SRE book, chapter 21):
//     with probability max(0, (requests − 2·accepts)/(requests + 1)) over
//     the last ten estimator windows, once they hold 10 requests. It
//     refuses nothing while clearly more than half the attempts succeed.
//
// Each attempt has the class its context carries ([CriticalityFrom]), and
// under a shortage the lower classes are refused first: for the same time
// available and the same measurements, whatever admits a sheddable attempt
// admits a default one, and whatever admits a default one admits a critical
// one. The default class is decided as described above. A sheddable attempt
// keeps headroom: it needs a chance of finishing halfway from Threshold to 1
// (0.75 for the default 0.5), twice the time under the Safety rule and the
// prior, is throttled with K halfway to 1 (1.5 for the default 2, never under 1.25), and gets half of Limit. A critical
// attempt gets the reserve: it needs a quarter of Threshold (0.125), half
// the time under Safety and the prior, is throttled with K doubled, and may
// use all of Limit, so it is refused only when it is unlikely to finish at
// all, when the dependency is stalled, or when Limit is reached. A
// sheddable attempt refused where a default one would go is refused as
// shed; it goes as a probe only when no attempt of a higher class has been
// admitted for a window (a second), since then nothing else would bring
// the estimate up to date.
//
// [Op.RegimeAt] says which regime the op is in (measuring, shedding,
// throttling, refusing, probing) and since when.
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
	// replaces Prior, and how many of the latest samples stand in for the
	// windows when they hold fewer (at most 64). Zero means 5.
	MinSamples int

	// ProbeEvery is the longest interval between probes while the op
	// refuses calls on its measurements (see the Op doc for how probes
	// go). Zero means 100 ms; a negative value disables probes, its own and
	// those its callers send (the op then follows its estimate until its
	// samples age out).
	ProbeEvery time.Duration

	// Throttle is K of client-side adaptive throttling: calls are refused
	// locally with probability max(0, (requests − K·accepts)/(requests+1)),
	// where accepts are attempts that did not fail for a reason of their
	// own. Zero means 2, the SRE book's value, which refuses nothing while
	// clearly more than half the attempts succeed and sheds almost every call of a
	// dependency that fails fast, keeping a trickle to see it recover. A
	// negative value turns throttling off. On by default because a
	// dependency that answers errors in a millisecond is never refused on
	// latency, and calling it forever wastes the budget of every request.
	// A value between 0 and 1.25 is taken as 1.25: throttling counts its
	// own refusals as requests, and with K at or below 1 they alone would
	// keep it refusing after the dependency recovered (probes, while on,
	// end a throttling episode sooner: see above).
	Throttle float64

	// Limit bounds the attempts of this op in flight at once; zero means no
	// bound. An attempt over its class's share is refused at once, as shed
	// (an [*Error] with [OutcomeShed], matching [ErrInsufficient]): a
	// sheddable one when half of Limit is in flight, a default one at Limit
	// less a quarter of it (rounded down, at least one), a critical one only
	// at Limit, so the top quarter is held for critical work. An op whose
	// callers are all of the default class thus runs at most Limit − Limit/4
	// attempts. The last rung of a [Ladder] is never refused for it. Set it
	// a few times above the dependency's own parallelism (four times the
	// cores of a CPU-bound service, say): the attempts it admits then keep
	// the dependency busy while they wait for it, sheddable work is not
	// refused before the dependency is full, and the quarter held for
	// critical work has room. Simulated with 16 workers at 0.8 and 3 times
	// their capacity, a Limit of 64 refused nothing at 0.8 and at 3 served
	// every critical request in time while the workers stayed busy. When
	// the dependency puts its work in a deadline-aware [Queue], size Limit
	// by time instead (Little's law): what the dependency serves in the
	// time a typical caller can wait, or leave it at zero and let the
	// queue refuse what cannot finish. In v0.3.1's overload harness (4 ms
	// of CPU a request, a 300 ms budget, a queue with a 75 ms Target) a
	// Limit of four per core refused 13-19 % at 0.8 times capacity and
	// one of 18 (75 ms / 4 ms) refused 0-1.5 %, sheddable work only.
	//
	// When Limit is zero, the op learns a limit from its dependency's
	// refusals and uses it as it would use Limit, class shares included.
	// An attempt whose error says the server refused it before starting
	// work ([ServerRefused] as [SentOf] reads it, which [DoNotRetry] and
	// the adapters' clients mark a shed answer with) cuts the learned
	// limit to 0.9 times the attempts in flight at that moment (at least
	// one); every limit's worth of successes raises it by one. The calls
	// over it are refused at home, shed, instead of being sent to be
	// refused. A dependency that refuses nothing is never limited, and the
	// op lets go of the learned limit entirely one estimator window (a
	// second by default) after the last refusal it saw: no call is refused
	// for it later than that. Attempts reported with [Op.EndAt] teach it
	// nothing, having no error to read.
	Limit int

	// Rand, when not nil, is the source of the op's random draws: which
	// calls error-rate throttling refuses, and which refused calls a
	// recovering op readmits. Nil means math/rand/v2's global source. A
	// Source that is not safe for concurrent use makes the op unsafe for
	// it too: set one where the op is driven from one goroutine, as budget
	// sim drives it, so that a seed makes its decisions repeatable.
	Rand rand.Source

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

	adm admissionState
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

// throttle records a call refused by error-rate throttling and returns the
// error that says so.
func (o *Op) throttle(ctx context.Context, r reading, n int) error {
	err := &Error{Stage: o.Name, Outcome: OutcomeThrottled, Remaining: r.remaining, Available: r.available, Budget: r.st.budget()}
	emit(ctx, r.st, o.Observer, Event{Kind: EventRefuse, Stage: o.Name, At: r.now, Remaining: r.remaining,
		Outcome: OutcomeThrottled, Attempt: n, Err: err})
	return err
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
		dec = Admission{Available: r.available, Probability: 1, Admit: r.available > 0 && r.available > o.MinUseful, Cap: max(o.Cap, 0)}
		if dec.Admit {
			o.adm.inflight.Add(1) // the last rung goes whatever the load: it is cheap
		}
	} else {
		dec = o.admit(mono(r.now), Ask{Available: r.available, Probe: IsProbe(ctx)}, CriticalityFrom(ctx))
	}
	switch {
	case dec.throttled:
		return o.throttle(ctx, r, ro.n)
	case dec.Shed:
		return o.shed(ctx, r, ro.n, dec)
	case !dec.Admit:
		return refuse(ctx, r, o.Observer, o.Name, ro.n, dec.Needed)
	}
	return o.execute(ctx, r, dec, ro, fn)
}

// execute runs an admitted attempt, records its latency and reports how it
// ended.
func (o *Op) execute(ctx context.Context, r reading, dec Admission, ro runOpts, fn func(ctx context.Context) error) error {
	limit, cause := r.available, ErrExpired
	if dec.Cap > 0 && dec.Cap < limit {
		limit, cause = dec.Cap, ErrAttemptCap // a probe's included: it needs no more to tell
	}
	o.started(mono(r.now))
	done := false
	defer func() {
		if !done { // fn panicked: its slot must not stay taken for ever
			o.adm.inflight.Add(-1)
		}
	}()
	var actx context.Context
	var cancel context.CancelFunc
	if limit == noDeadline {
		actx, cancel = context.WithCancel(ctx)
	} else {
		actx, cancel = context.WithDeadlineCause(ctx, r.now.Add(limit), cause)
	}
	if dec.Probe {
		actx = WithProbe(actx) // the hops below admit it as a probe too
	}
	err := fn(actx)
	done = true
	end := time.Now()
	elapsed := end.Sub(r.now)
	outcome := classify(actx, err, o.Expired)
	cancel()
	if err != nil && serverRefused(err) {
		// Whatever its outcome: the adapters' shed answers also match
		// context.DeadlineExceeded, which reads as an expiry.
		o.refusedAt(mono(end), o.adm.inflight.Load()) // this attempt still counts as in flight
	}
	o.ended(mono(r.now), mono(end), elapsed, outcome, dec.Probe)
	kind := ro.kind
	if kind == 0 {
		kind = EventAttempt
	}
	emit(ctx, r.st, o.Observer, Event{Kind: kind, Stage: o.Name, At: r.now, Duration: elapsed,
		Remaining: r.remaining, Needed: dec.Needed, Outcome: outcome, Attempt: ro.n, Probe: dec.Probe, Err: err})
	if outcome == OutcomeExpired {
		return &Error{Stage: o.Name, Outcome: OutcomeExpired, Remaining: r.remaining - elapsed, Available: r.available - elapsed, Budget: r.st.budget(), Err: err}
	}
	return err
}

// BeginAt is the admission attempt a of the op passes in [Op.Do], at now:
// the estimate, the stall check, the class's share of Limit, probes and
// error-rate throttling. When it admits, the attempt counts as started, its
// Cap bounds it (a probe's shorter time included), and its end must be
// reported with [Op.EndAt]. Do and [Call] do all of this themselves;
// BeginAt and EndAt are for attempts run on a clock of their own, as budget
// sim runs them on virtual time, so that what they decide is what the op
// decides. BeginAt emits no events and allocates nothing.
func (o *Op) BeginAt(now time.Time, a Ask) Admission {
	c := clampCriticality(a.Criticality)
	if o == nil {
		return Admission{Available: a.Available, Criticality: c}
	}
	m := mono(now)
	dec := o.admit(m, a, c)
	if dec.Admit {
		o.started(m)
	}
	return dec
}

// EndAt records the end, at end, of an attempt that [Op.BeginAt] admitted
// at start, as Do records the attempts it runs: a completed attempt
// (OutcomeOK) as a latency sample, one cut off by its deadline or Cap
// (OutcomeExpired) as a censored sample, and every outcome in the op's
// stall, probe and throttling state. probe is the admission's Probe. An
// attempt its caller abandoned is OutcomeCanceled and says nothing of the
// dependency's latency; one that failed for another reason is
// OutcomeFailed. EndAt emits no events and allocates nothing.
func (o *Op) EndAt(start, end time.Time, outcome Outcome, probe bool) {
	if o == nil {
		return
	}
	o.ended(mono(start), mono(end), end.Sub(start), outcome, probe)
}

// ended records an attempt that ran from offset start to offset stop,
// elapsed long, and ended with outcome.
func (o *Op) ended(start, stop int64, elapsed time.Duration, outcome Outcome, probe bool) {
	switch outcome {
	case OutcomeOK:
		o.Estimator.record(stop, elapsed, false)
		o.succeeded()
	case OutcomeExpired:
		// An attempt cut off after it left before a probe that has since
		// succeeded is evidence of the fault that probe saw end: it is
		// not recorded, or the op would refuse again on it.
		if start >= o.adm.okProbe.Load() {
			o.Estimator.record(stop, elapsed, true)
		}
	}
	o.learn(start, stop, outcome, probe)
	o.adm.inflight.Add(-1)
}
