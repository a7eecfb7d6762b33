package wire

import (
	"math"
	"time"

	"github.com/timebudget/budget"
)

// Policy is a server's inbound rule for request deadlines: which headers it trusts, the
// limits it puts on what they ask for, and when it refuses a request on arrival.
//
// The zero value is the policy of a service behind a trusted edge: it trusts
// [SourcesDefault], applies the strictest value a client sent with no cap, imposes no
// deadline on requests that send none, ignores and counts malformed values, and refuses
// only requests whose deadline has already passed. It sets no ceiling, so that a service
// with long-lived streams or uploads is not cut off by a default it never chose; it is
// therefore not a policy for a public edge, where clients are not trusted. An edge sets
// Trust to [SourcesNone] and Max (and usually Default and Min): every request then runs
// under the edge's own deadline whatever it sends, as Envoy's route timeout (15 s unless
// configured) does for the requests it proxies. A nil *Policy means enforcement is off
// (see [Policy.Decide]).
//
// Max is a ceiling on every request the policy admits: when Max is set, no handler runs
// with a deadline later than Max after arrival, whatever the client sent, trusted or not,
// or omitted. Call [Policy.Validate] when the configuration loads; [Switch.Store] and the
// adapters' constructors do.
//
// A Policy is read-only while in use: [Policy.Decide] may be called from many goroutines
// at once, but the fields must not change meanwhile. To change the policy of a running
// server, store a new one in a [Switch].
type Policy struct {
	// Max is the longest any request may run: a trusted value granting more time is
	// clamped to Max, and so is Default; a request that sends no trusted, usable
	// value runs under Max when Default is zero. Zero means no cap; negative is
	// invalid ([Policy.Validate]) and, if used anyway, means no cap.
	Max time.Duration

	// Default is the budget of a request that sends no trusted, usable value,
	// including one whose only absolute value was ignored for clock skew. Zero
	// means Max when Max is set, and otherwise imposes no deadline on such
	// requests; negative is invalid and, if used anyway, means zero.
	Default time.Duration

	// Min sheds requests on arrival: when less than Min is left for the handler
	// (after AnswerMargin), the request is refused with [ErrShed] rather than started
	// on work it cannot finish. Zero sheds only requests with no time left for the
	// handler at all; negative is invalid and, if used anyway, means zero.
	Min time.Duration

	// Trust is the set of headers that count. The zero value means [SourcesDefault].
	// An edge facing untrusted clients sets [SourcesNone], so that every request
	// starts fresh from Default whatever it sends. Untrusted headers are not read,
	// so their malformed values are neither counted nor rejected.
	Trust Sources

	// AnswerMargin is time kept back from the handler to write and send the answer:
	// the handler's deadline is the caller's deadline minus AnswerMargin, so that
	// when the handler runs out of time its answer still reaches the caller. The
	// adapters' own answer margin (WithAnswerMargin, adaptive by default) is taken off
	// instead when it is larger. Zero keeps nothing back beyond that; negative is
	// invalid and, if used anyway, means zero. (Before v0.4 this field was named
	// Reserve, a word that elsewhere means the caller's own time held back for later
	// work.)
	AnswerMargin time.Duration

	// Strict rejects a request that carries any malformed value in a trusted header,
	// with a [*ParseError] naming the header (an HTTP server answers 400). When false
	// (lenient), malformed values are ignored and counted in [Decision.Malformed];
	// lenient is the default because rejecting a request for a header it could live
	// without turns a client's formatting bug into an outage.
	Strict bool

	// Skew is how far an absolute value may disagree with the relative values, or
	// lie in the past when it comes alone, before it is taken as clock disagreement
	// (see [Extract]). Zero means [DefaultSkew]; negative is invalid and, if used
	// anyway, means DefaultSkew.
	Skew time.Duration

	// Criticality is the class, [budget.Sheddable], [budget.DefaultCriticality] or
	// [budget.Critical], of a request that carries no valid
	// [HeaderRequestCriticality] in a trusted source: every request at an edge that
	// trusts [SourcesNone], and the unclassified ones elsewhere. Zero is the
	// default class. An adapter's classifier, where one is configured, decides
	// instead. Other values are invalid ([Policy.Validate]) and, if used anyway,
	// are clamped to the nearest class.
	Criticality budget.Criticality
}

// Reason says why [Policy.Decide] refused a request. Its String form is the reason label
// of the budget.refusals counter.
type Reason uint8

const (
	// ReasonNone means the request was not refused.
	ReasonNone Reason = iota
	// ReasonExpired means the caller's deadline had passed on arrival ([ErrExpired]).
	ReasonExpired
	// ReasonShed means less than Policy.Min was left for the handler ([ErrShed]).
	ReasonShed
	// ReasonMalformed means a trusted header was malformed under a strict policy
	// ([ErrMalformed]).
	ReasonMalformed
)

// String returns "none", "expired", "shed" or "malformed".
func (r Reason) String() string {
	switch r {
	case ReasonExpired:
		return "expired"
	case ReasonShed:
		return "shed"
	case ReasonMalformed:
		return "malformed"
	default:
		return "none"
	}
}

// Decision is the outcome of [Policy.Decide] for one request. It is a plain value.
type Decision struct {
	// HasDeadline reports whether a deadline applies. When false, the request runs
	// without one and Deadline, CallerDeadline and Remaining are zero.
	HasDeadline bool
	// Deadline is the deadline to give the handler: the caller's deadline minus the
	// policy's AnswerMargin, expressed as now plus Remaining.
	Deadline time.Time
	// CallerDeadline is when the caller stops waiting, after clamping to Max.
	CallerDeadline time.Time
	// Remaining is the handler's time left on arrival, Deadline minus now. It is the
	// value to report as budget.remaining at arrival.
	Remaining time.Duration
	// Source is the header that set the deadline, or 0 when Default did or none
	// applies. Use SourceName for a telemetry label.
	Source Sources
	// Defaulted reports that the policy's Default set the deadline, or its Max
	// standing in for a zero Default.
	Defaulted bool
	// Clamped reports that the policy's Max shortened a deadline the client sent or
	// the Default.
	Clamped bool
	// Reason is why the request was refused, or ReasonNone.
	Reason Reason
	// Malformed counts malformed values in trusted headers.
	Malformed int
	// MalformedFrom is the set of trusted headers that had a malformed value.
	MalformedFrom Sources
	// Skew reports that an absolute value was ignored because the clocks disagree;
	// count it as a skew event.
	Skew bool
	// Criticality is the request's class: the least critical valid value of a
	// trusted [HeaderRequestCriticality], or the policy's Criticality when there is
	// none (see CriticalityFromHeader).
	Criticality budget.Criticality
	// CriticalityFromHeader reports that a trusted [HeaderRequestCriticality] set
	// Criticality, so that an adapter's classifier must not override it.
	CriticalityFromHeader bool
	// Probe reports that a trusted [HeaderBudgetProbe] marked the request as a probe:
	// the adapter starts its handler with the mark (budget.WithProbe).
	Probe bool
}

// Refused reports whether the request must be refused without running its handler.
func (d Decision) Refused() bool { return d.Reason != ReasonNone }

// SourceName returns the telemetry label for what set the deadline: the header name,
// "default" when the policy's Default did, or "none" when no deadline applies. It does
// not allocate.
func (d Decision) SourceName() string {
	switch {
	case d.Defaulted:
		return "default"
	case d.Source != 0:
		return d.Source.Header()
	default:
		return "none"
	}
}

// Decide applies the policy to a request that arrived at now with headers h, and returns
// the deadline to apply, or none. now should be taken as early as the server can see the
// request, so that time queued inside the server counts.
//
// The deadline is the strictest trusted value ([Extract]), or Default when there is none
// (Max when Default is zero), clamped to Max; the handler gets it minus AnswerMargin. So with
// Max set every admitted request has a deadline at most Max away. The error is non-nil exactly when
// the request must be refused, and Decision.Reason says why:
//
//   - a malformed trusted value under a Strict policy: a [*ParseError] naming the
//     header, matching [ErrMalformed] (HTTP 400);
//   - the caller's deadline already passed: [ErrExpired], which matches
//     [context.DeadlineExceeded] (HTTP 504, gRPC DEADLINE_EXCEEDED);
//   - less than Min left for the handler: [ErrShed] (HTTP 504, gRPC DEADLINE_EXCEEDED).
//
// An absolute value ignored for clock skew does not refuse the request; it sets
// Decision.Skew and the policy carries on as if the value were absent.
//
// A nil *Policy is enforcement off, the kill switch's "off" position: Decide reads no
// header, imposes no deadline and refuses nothing. A nil h is a request without headers.
//
// Decide is safe for concurrent use. Over an [HTTPHeader] or [Metadata] it does not
// allocate unless it returns a *ParseError, and costs about as much as [Extract]: about
// 250 ns over a typical http.Header with the default trust set.
func (p *Policy) Decide(h Header, now time.Time) (Decision, error) {
	return p.decide(h, now, 0, false)
}

// DecideSent is [Policy.Decide] for a request that may have waited after it was sent,
// such as a message in a broker's queue: sent is when its sender sent it, on the
// sender's clock (a message's timestamp), and the wait is charged to its budget.
//
// Relative values then count from sent rather than from now, so a message that asked
// for 5 s and waited 2 s in the queue gets 3 s; an absolute value is checked against
// them as Decide checks it, and alone it may lie in the past by the wait plus the skew
// threshold. A sent later than now by more than the threshold (Policy.Skew, or
// [DefaultSkew]) says the clocks disagree: Decision.Skew is set and relative values
// count from now, so that a sender whose clock runs ahead cannot add time to its
// budget. A sent in the past is taken as a wait, however long: a sender whose clock
// runs behind can only shorten its own budget. The zero sent is Decide.
//
// DecideSent costs what Decide costs and is safe for concurrent use.
func (p *Policy) DecideSent(h Header, sent, now time.Time) (Decision, error) {
	if p == nil || sent.IsZero() {
		return p.Decide(h, now)
	}
	skew := p.Skew
	if skew <= 0 {
		skew = DefaultSkew
	}
	queued := now.Sub(sent)
	if queued < -skew {
		return p.decide(h, now, 0, true)
	}
	return p.decide(h, now, max(queued, 0), false)
}

func (p *Policy) decide(h Header, now time.Time, queued time.Duration, skewed bool) (Decision, error) {
	var d Decision
	if p == nil {
		return d, nil
	}
	trust := p.trust()
	x := extract(h, trust, p.Skew, now, queued)
	d.Criticality = min(max(p.Criticality, CriticalitySheddable), CriticalityCritical)
	if trust&SourceRequestCriticality != 0 && h != nil {
		if c, ok := readCriticality(h, &x); ok {
			d.Criticality, d.CriticalityFromHeader = c, true
		}
	}
	if trust&SourceProbe != 0 && h != nil {
		d.Probe = readProbe(h, &x)
	}
	d.Source, d.Malformed, d.MalformedFrom, d.Skew = x.Source, x.Malformed, x.MalformedFrom, x.Skew || skewed

	var left time.Duration // the caller's time left
	switch {
	case x.Source != 0:
		left, d.HasDeadline = x.Remaining, true
	case p.Default > 0:
		left, d.HasDeadline, d.Defaulted = p.Default, true, true
	case p.Max > 0:
		// Max is a ceiling, not only a clamp: a request that sends nothing
		// usable must not run longer than one that asks for too much.
		left, d.HasDeadline, d.Defaulted = p.Max, true, true
	}
	if d.HasDeadline {
		if p.Max > 0 && left > p.Max {
			left, d.Clamped = p.Max, true
		}
		d.Remaining = left
		if p.AnswerMargin > 0 {
			d.Remaining = subSat(left, p.AnswerMargin)
		}
		d.CallerDeadline = now.Add(left)
		d.Deadline = now.Add(d.Remaining)
	}

	switch {
	case p.Strict && x.Malformed > 0:
		d.Reason = ReasonMalformed
		return d, x.Err()
	case !d.HasDeadline:
		return d, nil
	case left <= 0:
		d.Reason = ReasonExpired
		return d, ErrExpired
	case d.Remaining <= 0 || d.Remaining < p.Min:
		d.Reason = ReasonShed
		return d, ErrShed
	}
	return d, nil
}

// Trusts reports whether p reads every source in s: those of p's Trust, or
// [SourcesDefault] when Trust is zero. A nil p, enforcement off, trusts nothing. An
// adapter that reads a value of its own beside the deadline headers (a per-message
// budget, a class carried in W3C baggage) asks it, under the source that value is
// trusted as, so that its rule is the policy's. It does not allocate.
func (p *Policy) Trusts(s Sources) bool {
	return p != nil && p.trust().Has(s)
}

// trust is the set of sources p reads.
func (p *Policy) trust() Sources {
	if p.Trust == 0 {
		return SourcesDefault
	}
	return p.Trust
}

// subSat returns a-b for b > 0, saturating at the smallest time.Duration instead of
// wrapping around (possible only with an absurd Skew and AnswerMargin).
func subSat(a, b time.Duration) time.Duration {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}
