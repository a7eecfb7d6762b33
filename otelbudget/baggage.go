package otelbudget

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// BaggageKey is the W3C baggage member that carries a request's deadline:
// the deadline on the sender's wall clock in Unix milliseconds, rounded
// down, as 1 to 15 ASCII digits with no sign, exactly as the Request-Deadline
// header writes it ("budget-deadline=1767225600123"). It has no properties;
// a receiver ignores any. See the package documentation for how it is read.
const BaggageKey = "budget-deadline"

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
// deadline sends none. Extract reads the baggage, takes the member out of it,
// decides it under the inbound policy as if it were a Request-Deadline
// header, and places the deadline it yields on the returned context, so the
// handler's work, and the next hop's client, see it. A service instrumented
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

type propagatorOption func(*Propagator)

func (f propagatorOption) applyPropagator(p *Propagator) { f(p) }

// WithPolicy sets the inbound policy under which [Propagator.Extract]
// reads the deadline member, as the server adapters read headers. The
// member counts only when the policy trusts [wire.SourceRequestDeadline]
// (the zero policy does; an edge trusting [wire.SourcesNone] ignores it, as
// it ignores the header), lies no further in the past than the policy's
// Skew, and is clamped to its Max; a malformed one is counted and ignored, or
// recorded as a refusal under a Strict policy. The default is the zero
// policy; a nil p turns reading off (Inject still writes).
//
// A policy that [wire.Policy.Validate] rejects makes NewPropagator panic with
// an error matching [budget.ErrMisconfigured] and [wire.ErrInvalidPolicy],
// a setup mistake caught before any request; call Validate first to handle
// it as an error.
func WithPolicy(p *wire.Policy) PropagatorOption {
	return propagatorOption(func(prop *Propagator) {
		s := new(wire.Switch)
		if err := s.Store(p); err != nil {
			// A setup mistake, caught before any request.
			panic(fmt.Errorf("otelbudget: %w: %w", budget.ErrMisconfigured, err))
		}
		prop.policy = s
	})
}

// WithSwitch reads the inbound policy from s on every Extract, so an
// operator can change it at run time, as the server adapters' WithSwitch
// options allow. A nil s is the default, the zero policy.
func WithSwitch(s *wire.Switch) PropagatorOption {
	return propagatorOption(func(prop *Propagator) { prop.policy = s })
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
// deadline as the [BaggageKey] member in place of any the baggage held. A
// deadline that cannot be written (before 1970) and a baggage that is full
// (the W3C limits: 64 members, 8192 bytes) send no deadline.
func (p *Propagator) Inject(ctx context.Context, carrier propagation.TextMapCarrier) {
	bag := baggage.FromContext(ctx)
	if bag.Member(BaggageKey).Key() != "" {
		bag = bag.DeleteMember(BaggageKey)
	}
	v := bag.String()
	if dl, ok := ctx.Deadline(); ok && bag.Len() < maxMembers {
		// The member is appended as text: its key and digits need no
		// escaping, and building a Member and a new Baggage for it would
		// cost four times what propagation.Baggage's Inject costs.
		var buf [64]byte
		m := append(buf[:0], BaggageKey...)
		m = append(m, '=')
		if m, ok = wire.AppendRequestDeadline(m, dl); ok {
			switch {
			case v == "":
				v = string(m)
			case len(v)+1+len(m) <= maxBytes:
				v = v + "," + string(m)
			}
		}
	}
	if v != "" {
		carrier.Set("baggage", v)
	}
}

// The W3C baggage limits, which OpenTelemetry enforces on reading.
const (
	maxMembers = 64
	maxBytes   = 8192
)

// Extract reads the baggage in carrier into the returned context, as
// [propagation.Baggage] does, less the [BaggageKey] member, and decides that
// member under the policy ([WithPolicy]) with [wire.Policy.Decide], as a
// Request-Deadline header is decided: trust, skew guard, Max, Reserve, Min
// and the malformed-value rule. [BaggageDecision] returns the decision.
//
// When the member set the deadline, the returned context carries it (the
// decision's Deadline: the caller's less the policy's Reserve), with
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
// released when the deadline passes or when parent ends, whichever is
// first: Extract has no caller to return a cancel function to, and net/http
// and grpc-go end a request's context when its handler returns.
func (p *Propagator) Extract(parent context.Context, carrier propagation.TextMapCarrier) context.Context {
	now := time.Now()
	ctx := propagation.Baggage{}.Extract(parent, carrier)
	bag := baggage.FromContext(ctx)
	m := bag.Member(BaggageKey)
	if m.Key() == "" {
		return ctx
	}
	ctx = baggage.ContextWithBaggage(ctx, bag.DeleteMember(BaggageKey))
	pol := p.load()
	if pol == nil {
		return ctx
	}
	dec, _ := pol.Decide(member(m.Value()), now)
	if dec.Source == 0 && dec.Reason == wire.ReasonNone {
		if dec.Malformed == 0 && !dec.Skew {
			return ctx // untrusted: not read at all
		}
		return context.WithValue(ctx, decisionKey{}, dec)
	}
	ctx = context.WithValue(ctx, decisionKey{}, dec)
	if dec.Source == 0 {
		return ctx // refused as malformed under a strict policy: no deadline to place
	}
	ctx, cancel := context.WithDeadlineCause(ctx, dec.Deadline, budget.ErrExpired)
	_ = cancel // released with parent, or at the deadline: see above
	return ctx
}

type decisionKey struct{}

// BaggageDecision returns the decision [Propagator.Extract] made about the
// [BaggageKey] member of the request whose context is ctx, and false when the
// request carried no such member or the policy does not trust it. A refused
// decision (Reason expired, shed or malformed) is what the header policy
// would have refused: a server that reads the baggage alone refuses the
// request as it would for the header.
func BaggageDecision(ctx context.Context) (wire.Decision, bool) {
	dec, ok := ctx.Value(decisionKey{}).(wire.Decision)
	return dec, ok
}

// member presents a baggage member's value to the policy as the
// Request-Deadline header: the same format, trusted as that header is.
type member string

func (m member) Values(name string) []string {
	if name == requestDeadline {
		return []string{string(m)}
	}
	return nil
}

const requestDeadline = "request-deadline"
