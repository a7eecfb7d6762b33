package otelbudget_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"

	"github.com/timebudget/budget/otelbudget"
	"github.com/timebudget/budget/wire"
)

// FuzzBaggageDeadline feeds Extract any baggage header. Whatever arrives: no
// panic; the member never survives into the context's baggage; a deadline is
// placed only when the header policy, given the member's value as
// Request-Deadline, would set one from it, and it is never later than Max
// from arrival nor earlier than the skew guard allows.
func FuzzBaggageDeadline(f *testing.F) {
	now := time.Now()
	f.Add(otelbudget.BaggageKey + "=" + unixMs(now.Add(time.Second)))
	f.Add(otelbudget.BaggageKey + "=" + unixMs(now.Add(-time.Hour)))
	f.Add(otelbudget.BaggageKey + "=99999999999999999999")
	f.Add(otelbudget.BaggageKey + "=-5")
	f.Add(otelbudget.BaggageKey + "=%31%32;prop=1, a=b")
	f.Add("a=b," + otelbudget.BaggageKey + "=1," + otelbudget.BaggageKey + "=2")
	f.Add(otelbudget.BaggageKey + "= 1700000000000 ")
	const max = 5 * time.Second
	pol := &wire.Policy{Max: max}
	prop := otelbudget.NewPropagator(otelbudget.WithPolicy(pol))
	f.Fuzz(func(t *testing.T, header string) {
		start := time.Now()
		ctx := prop.Extract(context.Background(), propagation.HeaderCarrier(http.Header{"Baggage": {header}}))
		if baggage.FromContext(ctx).Member(otelbudget.BaggageKey).Key() != "" {
			t.Fatalf("%q: the member survived into the baggage", header)
		}
		raw := baggage.FromContext(propagation.Baggage{}.Extract(context.Background(),
			propagation.HeaderCarrier(http.Header{"Baggage": {header}}))).Member(otelbudget.BaggageKey).Value()
		want, _ := pol.Decide(wire.HTTPHeader{"Request-Deadline": {raw}}, start)
		dl, ok := ctx.Deadline()
		if ok != (want.Source != 0) {
			t.Fatalf("%q: deadline placed %v, header policy %+v", header, ok, want)
		}
		if ok && (dl.After(time.Now().Add(max)) || dl.Before(start.Add(-wire.DefaultSkew))) {
			t.Fatalf("%q: deadline %v out of bounds", header, dl.Sub(start))
		}
	})
}
