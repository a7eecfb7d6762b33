package otelbudget

import (
	"context"
	"runtime"
	"time"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// BaggageKey is the W3C baggage member that carries a request's deadline:
// the deadline on the sender's wall clock in Unix milliseconds, rounded
// down, as 1 to 15 ASCII digits with no sign, exactly as the Request-Deadline
// header writes it ("budget-deadline=1767225600123"). It has no properties;
// a receiver ignores any. See the package documentation for how it is read.
const BaggageKey = "budget-deadline"

// BaggageCriticalityKey is the W3C baggage member that carries a request's
// class ([budget.Criticality]) beside its deadline: "critical" or
// "sheddable", exactly as the Request-Criticality header writes it
// ("budget-criticality=critical"). The default class is not sent. A receiver
// reads "critical", "default" and "sheddable" in any ASCII case.
const BaggageCriticalityKey = "budget-criticality"

// Propagator is a [propagation.TextMapPropagator] for W3C baggage that also
// carries the request's deadline, as the baggage member [BaggageKey]. Use it
// in place of [propagation.Baggage] (not beside it: both write the one
// baggage header):
//
//	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(
//		propagation.TraceContext{}, otelbudget.NewPropagator(otelbudget.WithPolicy(policy))))
//
// Inject writes the deadline of the context (its Deadline method, as grpc-go
// and net/http see it) beside the context's other baggage members, replacing
// any stale budget-deadline member the baggage held; a context without a
// deadline sends none; the request's class ([budget.CriticalityFrom]), when
// not the default, goes beside it as [BaggageCriticalityKey]. Extract reads
// the baggage, takes the members out of it, decides them under the inbound
// policy as if they were the Request-Deadline and Request-Criticality
// headers, and places the deadline and class they yield on the returned
// context, so the handler's work, and the next hop's client, see them. A service instrumented
// with otelhttp or otelgrpc alone, in any language, forwards the member with
// the rest of the baggage, so the budget crosses it.
//
// The zero Propagator, like NewPropagator(), decides under the zero
// [wire.Policy]. A Propagator is safe for concurrent use.
type Propagator struct {
	policy *wire.Switch // nil: the zero policy
}

var _ propagation.TextMapPropagator = (*Propagator)(nil)

// PropagatorOption configures [NewPropagator].
type PropagatorOption interface{ applyPropagator(*Propagator) }

// policyOption is both options: it sets where Extract reads its policy, a
// switch (WithSwitch) or a fixed policy (WithPolicy), which gets a switch of
// its own when NewPropagator applies it, so that an invalid one panics there.
type policyOption struct {
	s     *wire.Switch
	p     *wire.Policy
	fixed bool
}

func (o policyOption) applyPropagator(prop *Propagator) {
	if o.fixed {
		o.s = edge.PolicySwitch("otelbudget", o.p)
	}
	prop.policy = o.s
}

// WithPolicy sets the inbound policy under which [Propagator.Extract]
// reads the deadline member, as the server adapters read headers. The
// member counts only when the policy trusts [wire.SourceRequestDeadline]
// (the zero policy does; an edge trusting [wire.SourcesNone] ignores it, as
// it ignores the header), lies no further in the past than the policy's
// Skew, and is clamped to its Max; a malformed one is counted and ignored, or
// recorded as a refusal under a Strict policy. The class member counts only
// when the policy trusts [wire.SourceRequestCriticality], as the
// Request-Criticality header. The default is the zero policy; a nil p turns
// reading off (Inject still writes).
//
// A policy that [wire.Policy.Validate] rejects makes NewPropagator panic with
// an error matching [budget.ErrMisconfigured] and [wire.ErrInvalidPolicy],
// a setup mistake caught before any request; call Validate first to handle
// it as an error.
func WithPolicy(p *wire.Policy) PropagatorOption {
	return policyOption{p: p, fixed: true}
}

// WithSwitch reads the inbound policy from s on every Extract, so an
// operator can change it at run time, as the server adapters' WithSwitch
// options allow. A nil s is the default, the zero policy.
func WithSwitch(s *wire.Switch) PropagatorOption {
	return policyOption{s: s}
}

// NewPropagator returns a baggage propagator that carries the deadline.
func NewPropagator(opts ...PropagatorOption) *Propagator {
	p := new(Propagator)
	for _, o := range opts {
		if o != nil {
			o.applyPropagator(p)
		}
	}
	return p
}

var zeroPolicy wire.Policy

func (p *Propagator) load() *wire.Policy {
	if p == nil || p.policy == nil {
		return &zeroPolicy
	}
	return p.policy.Load()
}

// Fields returns the one header the propagator writes: "baggage".
func (p *Propagator) Fields() []string { return []string{"baggage"} }

// Inject writes the context's baggage to carrier, with the context's
// deadline as the [BaggageKey] member and its class, when not the default,
// as the [BaggageCriticalityKey] member, in place of any the baggage held. A
// deadline that cannot be written (before 1970) and a baggage that is full
// (the W3C limits: 64 members, 8192 bytes) send no deadline.
func (p *Propagator) Inject(ctx context.Context, carrier propagation.TextMapCarrier) {
	bag := withoutOurs(baggage.FromContext(ctx))
	v := bag.String()
	n := bag.Len()
	// The members are appended as text: their keys and values need no
	// escaping, and building a Member and a new Baggage for each would cost
	// four times what propagation.Baggage's Inject costs.
	var buf [64]byte
	if dl, ok := ctx.Deadline(); ok {
		m := append(append(buf[:0], BaggageKey...), '=')
		if m, ok = wire.AppendRequestDeadline(m, dl); ok {
			v, n = appendMember(v, n, m)
		}
	}
	if class, ok := edge.CriticalityValue(ctx); ok {
		m := append(append(buf[:0], BaggageCriticalityKey...), '=')
		v, _ = appendMember(v, n, append(m, class...))
	}
	if v != "" {
		carrier.Set("baggage", v)
	}
}

// appendMember adds the list-member m to the baggage text v of n members,
// unless that would break the W3C limits.
func appendMember(v string, n int, m []byte) (string, int) {
	switch {
	case n >= maxMembers:
		return v, n
	case v == "":
		return string(m), n + 1
	case len(v)+1+len(m) <= maxBytes:
		return v + "," + string(m), n + 1
	}
	return v, n
}

// withoutOurs returns bag without this package's members.
func withoutOurs(bag baggage.Baggage) baggage.Baggage {
	if bag.Member(BaggageKey).Key() != "" {
		bag = bag.DeleteMember(BaggageKey)
	}
	if bag.Member(BaggageCriticalityKey).Key() != "" {
		bag = bag.DeleteMember(BaggageCriticalityKey)
	}
	return bag
}

// The W3C baggage limits, which OpenTelemetry enforces on reading.
const (
	maxMembers = 64
	maxBytes   = 8192
)

// Extract reads the baggage in carrier into the returned context, as
// [propagation.Baggage] does, less the [BaggageKey] member, and decides that
// member under the policy ([WithPolicy]) with [wire.Policy.Decide], as a
// Request-Deadline header is decided: trust, skew guard, Max, AnswerMargin, Min
// and the malformed-value rule. [BaggageDecision] returns the decision.
//
// A trusted, valid [BaggageCriticalityKey] member puts its class on the
// returned context, and a trusted member, valid or not, its value
// ([edge.WithCarriedCriticality]). A server adapter that runs after Extract
// (httpbudget, grpcbudget, connectbudget, amqpbudget) decides that value
// under its own policy as one more Request-Criticality value: it counts only
// when its policy trusts [wire.SourceRequestCriticality], so that at an edge
// that trusts nothing (the policy's Criticality for every request) a caller
// cannot raise its own class through its baggage, the least critical of it
// and the header wins, and a malformed one is refused under a Strict policy
// as the header would be; the adapter's classifier replaces it.
//
// When the member set the deadline, the returned context carries it (the
// decision's Deadline: the caller's less the policy's AnswerMargin), with
// [budget.ErrExpired] as its cause once it passes: already done when the
// caller's deadline had passed on arrival, short when it left less than Min.
// A propagator cannot refuse a request; the server adapter that runs next
// (httpbudget, grpcbudget) refuses one whose context is done, and code that
// wants to shed on Min, or reject a malformed member under a strict policy,
// reads BaggageDecision. A member the policy does not trust, or ignores for
// skew or as malformed, changes nothing but the decision; the policy's
// Default and Max for requests that send no deadline are left to the server
// adapter, which also reads the headers.
//
// The deadline is placed with [context.WithDeadlineCause], whose timer is
// released when the deadline passes, when parent ends, or once nothing
// refers to the returned context (or a context derived from it) any more,
// whichever is first: Extract has no caller to return a cancel function to,
// and a parent that never ends, such as a queue consumer's
// context.Background(), must not hold a timer per message until a deadline
// that a caller may set years away.
func (p *Propagator) Extract(parent context.Context, carrier propagation.TextMapCarrier) context.Context {
	now := time.Now()
	ctx := propagation.Baggage{}.Extract(parent, carrier)
	bag := baggage.FromContext(ctx)
	h := members{deadline: bag.Member(BaggageKey).Value(), class: bag.Member(BaggageCriticalityKey).Value()}
	if bag.Member(BaggageKey).Key() == "" && bag.Member(BaggageCriticalityKey).Key() == "" {
		return ctx
	}
	ctx = baggage.ContextWithBaggage(ctx, withoutOurs(bag))
	pol := p.load()
	if pol == nil {
		return ctx
	}
	dec, _ := pol.Decide(h, now)
	if dec.Source == 0 && dec.Reason == wire.ReasonNone && dec.Malformed == 0 && !dec.Skew && !dec.CriticalityFromHeader {
		return ctx // untrusted or empty: not read at all
	}
	ctx = context.WithValue(ctx, decisionKey{}, dec)
	if h.class != "" && pol.Trusts(wire.SourceRequestCriticality) {
		ctx = edge.WithCarriedCriticality(ctx, h.class)
	}
	if dec.Source == 0 {
		// No deadline from the member: ignored (skew, malformed), refused
		// as malformed under a strict policy, or none was sent.
		return ctx
	}
	return withDeadline(ctx, dec.Deadline)
}

// released is the context Extract returns when the member set a deadline:
// the timer context of [context.WithDeadlineCause], wrapped so that the
// wrapper's cleanup can release the timer once nothing refers to the
// context any more. The timer refers to the inner context, never to the
// wrapper, so the wrapper becomes unreachable when the request's code drops
// it; a context derived from it refers to it, and keeps it, as long as that
// context is in use.
type released struct{ context.Context }

// withDeadline returns parent with deadline d and cause [budget.ErrExpired],
// whose timer is released at d, when parent ends, or when the returned
// context is no longer referred to, whichever is first. Extract has no
// caller to return a cancel function to, and a parent that never ends (a
// queue consumer's context.Background()) with a deadline years away would
// otherwise hold the timer and the context, about 2 KB, until then.
func withDeadline(parent context.Context, d time.Time) context.Context {
	inner, cancel := context.WithDeadlineCause(parent, d, budget.ErrExpired)
	if inner.Err() != nil {
		cancel() // already done: nothing is held
		return inner
	}
	ctx := &released{inner}
	runtime.AddCleanup(ctx, func(cancel context.CancelFunc) { cancel() }, cancel)
	return ctx
}

type decisionKey struct{}

// BaggageDecision returns the decision [Propagator.Extract] made about the
// [BaggageKey] and [BaggageCriticalityKey] members of the request whose
// context is ctx, and false when the
// request carried neither member or the policy trusts neither. A refused
// decision (Reason expired, shed or malformed) is what the header policy
// would have refused: a server that reads the baggage alone refuses the
// request as it would for the header.
func BaggageDecision(ctx context.Context) (wire.Decision, bool) {
	dec, ok := ctx.Value(decisionKey{}).(wire.Decision)
	return dec, ok
}

// members presents the baggage members' values to the policy as the
// Request-Deadline and Request-Criticality headers: the same formats,
// trusted as those headers are.
type members struct{ deadline, class string }

func (m members) Values(name string) []string {
	switch {
	case name == requestDeadline && m.deadline != "":
		return []string{m.deadline}
	case name == requestCriticality && m.class != "":
		return []string{m.class}
	}
	return nil
}

const (
	requestDeadline    = "request-deadline"
	requestCriticality = "request-criticality"
)
