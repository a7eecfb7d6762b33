package edge

import (
	"context"

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
	return wire.FormatRequestCriticality(int8(c))
}

// WithCarriedCriticality returns a copy of ctx carrying class c
// ([budget.WithCriticality]) as read from a carrier other than the request's
// own headers, such as W3C baggage (otelbudget's propagator). The class
// stands as the caller's word, not the service's: [Arrival.Arrive] keeps it
// for the handler only under a policy that trusts
// [wire.SourceRequestCriticality], as it would a Request-Criticality header,
// so that at an edge that trusts nothing a caller cannot raise its own class
// through its baggage. Code that runs without an adapter after the carrier
// was read sees the class as usual.
func WithCarriedCriticality(ctx context.Context, c budget.Criticality) context.Context {
	return context.WithValue(budget.WithCriticality(ctx, c), carriedKey{}, c)
}

type carriedKey struct{}

// carried reports whether the class c on ctx is one a carrier put there
// ([WithCarriedCriticality]) and no code has replaced since.
func carried(ctx context.Context, c budget.Criticality) bool {
	v, ok := ctx.Value(carriedKey{}).(budget.Criticality)
	return ok && v == c
}
