package edge

import (
	"context"
	"errors"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// Margin is an answer margin: the time a server holds back from its
// handler's deadline so that its answer reaches the caller before the caller
// stops waiting. For returns the margin for a caller with left before its
// deadline; ObserveTransit learns from a request whose own Request-Timeout-Ms
// and Request-Deadline values were rel and abs on arrival at now. The
// adapters' answer margins implement it.
type Margin interface {
	For(left time.Duration) time.Duration
	ObserveTransit(now time.Time, rel, abs string)
}

// Arrival is one adapter's configuration of the arrival steps. The zero value
// starts budgets named "request" with no observer, the default ledger and no
// answer margin. An Arrival is read-only while in use.
type Arrival struct {
	// Adapter names the adapter in the errors it reports, as in
	// "httpbudget: malformed deadline header ignored: ...". Empty means
	// "budget".
	Adapter string
	// Stage names the budget that arrival starts and the refusals it
	// reports; empty means "request".
	Stage string
	// Observer receives the skew, malformed and refusal events of arrival and
	// every event of the budget it starts. Nil means none.
	Observer budget.Observer
	// LedgerCapacity is the budget's [budget.Config.LedgerCapacity].
	LedgerCapacity int
	// Margin, when not nil, is taken off the caller's deadline (when it is
	// larger than the policy's AnswerMargin) and learns the transit of requests
	// that carry this library's header pair.
	Margin Margin
}

// Request is a request as it arrives.
type Request struct {
	// Header reads the request's deadline sources, and its Request-Attempt.
	Header wire.Header
	// Now is when the request arrived, read as early as the server can see it.
	Now time.Time
	// Sent is when the sender sent the request, on its clock, for a request
	// that may have waited in a queue (a broker message's timestamp): its
	// wait is then charged to the budget ([wire.Policy.DecideSent]). Zero for
	// a request received directly.
	Sent time.Time
	// Criticality is the class the adapter's classifier gave the request,
	// used when Classified is set and no trusted Request-Criticality header
	// set the class. Otherwise a class other than the default already on the
	// request's context is kept, and the policy's Criticality applies only
	// when there is none (see [Arrival.Arrive]).
	Criticality budget.Criticality
	// Classified reports that a classifier set Criticality.
	Classified bool
}

// CallRequest returns the Request of a call to name, a gRPC method or a
// Connect procedure, whose headers h arrived at now. When classify, the
// adapter's classifier (WithClassifier), is not nil, it gives the call its
// class from ctx and name, and the request is marked Classified; otherwise
// the class is left to [Arrival.Arrive]'s other sources. classify runs once,
// here, before the handler.
func CallRequest(ctx context.Context, name string, h wire.Header, now time.Time,
	classify func(ctx context.Context, name string) budget.Criticality) Request {
	req := Request{Header: h, Now: now}
	if classify != nil {
		req.Criticality, req.Classified = classify(ctx, name), true
	}
	return req
}

// Arrive applies p to req, which arrived with ctx, and returns the context
// its handler runs in, with the cancel function of the budget started there
// (nil when none was: the policy set no deadline and ctx is returned as it
// is), and the policy's decision.
//
// The error is non-nil exactly when the request is refused, and the handler
// must not run. It is the policy's, as [wire.Policy.Decide] returns it, and
// the decision's Reason says which: a [*wire.ParseError] for a malformed
// value under a strict policy, [wire.ErrExpired] when the caller's deadline
// had passed, [wire.ErrShed] when less than the policy's Min was left; each
// adapter spells it for its carrier. Refusals other than malformed ones are
// reported as [budget.EventRefuse] (with [budget.OutcomeExpired] or
// [budget.OutcomeShed]), skewed values as [budget.EventSkew] and malformed
// ones, refused or ignored, as [budget.EventMalformed].
//
// The handler's context carries the request's class ([budget.CriticalityFrom]),
// the first of: a trusted Request-Criticality header's; req.Criticality when
// req.Classified; the class ctx already carries when it is not the default
// (one that code the server runs before the adapter put there; a value read
// from the caller's W3C baggage, [WithCarriedCriticality], is decided with
// the headers instead, as one more Request-Criticality value); the policy's
// Criticality. A class on ctx thus survives a hop whose
// headers carry none, and the policy's class is a default, not an override.
// It rides in the budget's own context, so it costs no allocation when a
// budget starts. A request that a trusted [wire.HeaderBudgetProbe] marks as a
// probe ([wire.Decision.Probe]) runs with the mark ([budget.WithProbe]), so
// that admission downstream treats it as a probe of its own.
//
// A nil p is enforcement off: nothing is read, nothing refused, and ctx is
// returned unchanged. The budget's deadline is the policy's (the caller's
// less AnswerMargin) or, when earlier, the caller's less the margin; it never
// extends ctx's. Canceling the returned context releases resources
// associated with it, so code should call cancel as soon as the handler
// returns.
//
// Apart from what starting a budget costs ([budget.Config.StartUntil]),
// Arrive allocates only to describe a malformed value or a refusal.
func (a Arrival) Arrive(ctx context.Context, p *wire.Policy, req Request) (context.Context, context.CancelFunc, wire.Decision, error) {
	now := req.Now
	h, carried := withCarried(ctx, req.Header)
	dec, err := p.DecideSent(h, req.Sent, now)
	stage := a.stage()
	if o := a.Observer; o != nil {
		if dec.Skew {
			o.Observe(ctx, budget.Event{Kind: budget.EventSkew, Stage: stage, At: now})
		}
		if dec.Malformed > 0 {
			o.Observe(ctx, budget.Event{Kind: budget.EventMalformed, Stage: stage, At: now, Err: a.malformedErr(dec, err)})
		}
	}
	if err != nil {
		a.refused(ctx, stage, now, dec, err)
		return nil, nil, dec, err
	}
	class := classOf(ctx, req, dec, carried)
	if !dec.HasDeadline {
		return probe(budget.WithCriticality(ctx, class), dec), nil, dec, nil
	}
	cfg := budget.Config{Stage: stage, Observer: a.Observer, LedgerCapacity: a.LedgerCapacity, Criticality: class}
	h = req.Header
	if h != nil {
		if v := h.Values(requestAttempt); len(v) == 1 {
			cfg.Attempt, _, _ = wire.ParseRequestAttempt(v[0])
		}
	}
	deadline := dec.Deadline
	if a.Margin != nil {
		if h != nil && (dec.Source == wire.SourceRequestTimeout || dec.Source == wire.SourceRequestDeadline) {
			// One of our headers won: the pair tells how long the request
			// was on the way, which the answer will take again going back.
			if rel, abs := h.Values(requestTimeout), h.Values(requestDeadline); len(rel) == 1 && len(abs) == 1 {
				a.Margin.ObserveTransit(now, rel[0], abs[0])
			}
		}
		if m := a.Margin.For(dec.CallerDeadline.Sub(now)); m > 0 && dec.CallerDeadline.Add(-m).Before(deadline) {
			deadline = dec.CallerDeadline.Add(-m)
		}
	}
	bctx, cancel := cfg.StartUntil(ctx, deadline)
	if class == budget.DefaultCriticality {
		// The budget's context keeps parent's class; an arriving request
		// has its own.
		bctx = budget.WithCriticality(bctx, class)
	}
	return probe(bctx, dec), cancel, dec, nil
}

// probe returns ctx marked as a probe ([budget.WithProbe]) when a trusted
// Budget-Probe header marked the request.
func probe(ctx context.Context, dec wire.Decision) context.Context {
	if dec.Probe {
		return budget.WithProbe(ctx)
	}
	return ctx
}

// classOf is the class of a request arriving with ctx: a trusted header's,
// else the classifier's, else the class ctx already carries when it is not
// the default and no carrier put it there (carried: the carrier's value was
// decided with the headers), else the policy's.
func classOf(ctx context.Context, req Request, dec wire.Decision, carried bool) budget.Criticality {
	switch {
	case dec.CriticalityFromHeader:
		return budget.Criticality(dec.Criticality)
	case req.Classified:
		return req.Criticality
	}
	if c := budget.CriticalityFrom(ctx); c != budget.DefaultCriticality && !carried {
		return c
	}
	return budget.Criticality(dec.Criticality)
}

// The lowercase names wire.Header implementations are asked for.
const (
	requestAttempt     = "request-attempt"
	requestTimeout     = "request-timeout-ms"
	requestDeadline    = "request-deadline"
	requestCriticality = "request-criticality"
)

func (a Arrival) stage() string {
	if a.Stage == "" {
		return "request"
	}
	return a.Stage
}

// malformedErr is the error of a malformed-value event: the policy's own
// error under a strict policy, and one naming the headers otherwise.
func (a Arrival) malformedErr(dec wire.Decision, err error) error {
	if err != nil {
		return err
	}
	name := a.Adapter
	if name == "" {
		name = "budget"
	}
	return errors.New(name + ": malformed deadline header ignored: " + dec.MalformedFrom.String())
}

// refused reports a refusal on arrival.
func (a Arrival) refused(ctx context.Context, stage string, now time.Time, dec wire.Decision, err error) {
	if a.Observer == nil || dec.Reason == wire.ReasonMalformed {
		return
	}
	outcome := budget.OutcomeShed
	if dec.Reason == wire.ReasonExpired {
		outcome = budget.OutcomeExpired
	}
	a.Observer.Observe(ctx, budget.Event{Kind: budget.EventRefuse, Stage: stage, At: now,
		Remaining: dec.Remaining, Outcome: outcome, Err: err})
}
