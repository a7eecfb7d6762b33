package edge

import (
	"context"
	"net/http"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// CriticalityValue returns the [wire.HeaderRequestCriticality] value to send
// for the class ctx carries ([budget.CriticalityFrom]), and false for the
// default class, which is not sent: a receiver that finds no header applies
// its own policy's class. It reads one context value and does not allocate.
// Clients send it whether or not ctx has a deadline.
func CriticalityValue(ctx context.Context) (string, bool) {
	c := budget.CriticalityFrom(ctx)
	if c == budget.DefaultCriticality {
		return "", false
	}
	return wire.FormatRequestCriticality(c)
}

// ProbeValue returns the [wire.HeaderBudgetProbe] value to send for a call
// whose context is marked as a probe ([budget.IsProbe]), and false for any
// other call, which sends no header. It reads one context value and does not
// allocate. Clients send it whether or not ctx has a deadline.
func ProbeValue(ctx context.Context) (string, bool) {
	if budget.IsProbe(ctx) {
		return wire.ProbeValue, true
	}
	return "", false
}

// The header values StampHTTP writes, one shared slice per value: net/http
// only reads them, and their capacity equals their length, so an append by
// anyone else copies rather than writes into them.
var (
	criticalValue  = []string{"critical"}[:1:1]
	sheddableValue = []string{"sheddable"}[:1:1]
	probeValue     = []string{wire.ProbeValue}[:1:1]
)

// StampHTTP writes the class ctx carries into h, the header of an outgoing
// HTTP request that the caller owns, as [wire.HeaderRequestCriticality], and
// the probe mark as [wire.HeaderBudgetProbe] when ctx is marked as a probe:
// the values of [CriticalityValue] and [ProbeValue], under their canonical
// names. The default class is not sent. It does not allocate: the values are
// slices shared by every request, which h's readers must not modify.
func StampHTTP(ctx context.Context, h http.Header) {
	switch budget.CriticalityFrom(ctx) {
	case budget.Critical:
		h[wire.HeaderRequestCriticality] = criticalValue
	case budget.Sheddable:
		h[wire.HeaderRequestCriticality] = sheddableValue
	}
	if budget.IsProbe(ctx) {
		h[wire.HeaderBudgetProbe] = probeValue
	}
}

// WithCarriedCriticality returns a copy of ctx carrying a
// [wire.HeaderRequestCriticality] value read from a carrier other than the
// request's own headers, such as W3C baggage (otelbudget's propagator), and
// the class it names, when valid ([budget.WithCriticality]), for code that
// runs without an adapter. The value stands as the caller's word, not the
// service's: [Arrival.Arrive] decides it under its own policy as one more
// Request-Criticality value (trusted only with
// [wire.SourceRequestCriticality], counted when malformed, refused as
// malformed under a Strict policy), so that at an edge that trusts nothing a
// caller cannot raise its own class through its baggage, and one hostile
// value gets one decision whichever carrier brought it.
func WithCarriedCriticality(ctx context.Context, value string) context.Context {
	if c, ok, _ := wire.ParseRequestCriticality(value); ok {
		ctx = budget.WithCriticality(ctx, budget.Criticality(c))
	}
	return context.WithValue(ctx, carriedKey{}, value)
}

type carriedKey struct{}

// withCarried returns h with the Request-Criticality value a carrier put on
// ctx ([WithCarriedCriticality]) added to its own, and h alone when there is
// none.
func withCarried(ctx context.Context, h wire.Header) (wire.Header, bool) {
	v, ok := ctx.Value(carriedKey{}).(string)
	if !ok {
		return h, false
	}
	return carriedHeader{h, v}, true
}

// carriedHeader is a request's headers with one more Request-Criticality
// value.
type carriedHeader struct {
	h     wire.Header
	class string
}

func (c carriedHeader) Values(name string) []string {
	var own []string
	if c.h != nil {
		own = c.h.Values(name)
	}
	if name != requestCriticality {
		return own
	}
	return append(own[:len(own):len(own)], c.class)
}
