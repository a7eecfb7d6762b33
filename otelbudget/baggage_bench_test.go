package otelbudget_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"

	"github.com/timebudget/budget/otelbudget"
)

// propagatorCase is a request with one user member and a 2 s deadline, and
// the header the deadline-carrying propagator writes for it.
func propagatorCase(tb testing.TB) (context.Context, http.Header) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	tb.Cleanup(cancel)
	user, _ := baggage.NewMemberRaw("user", "42")
	bag, _ := baggage.New(user)
	ctx = baggage.ContextWithBaggage(ctx, bag)
	h := http.Header{}
	otelbudget.NewPropagator().Inject(ctx, propagation.HeaderCarrier(h))
	return ctx, h
}

// BenchmarkPropagator puts the deadline-carrying propagator beside
// propagation.Baggage, which it replaces, for a request carrying one user
// member: Inject and Extract each.
func BenchmarkPropagator(b *testing.B) {
	ctx, h := propagatorCase(b)
	for _, bc := range []struct {
		name string
		p    propagation.TextMapPropagator
	}{{"baggage", propagation.Baggage{}}, {"budget", otelbudget.NewPropagator()}} {
		b.Run("inject/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.p.Inject(ctx, propagation.HeaderCarrier(http.Header{}))
			}
		})
		b.Run("extract/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = bc.p.Extract(context.Background(), propagation.HeaderCarrier(h))
			}
		})
	}
}

// TestPropagatorAllocations pins what carrying the deadline adds to
// propagation.Baggage, measured for one user member: Inject appends the
// member to the baggage's text (measured: 1 more, the joined string);
// Extract copies the baggage without the member, decides it, places the
// deadline (a timer context registered with the request's context) and
// stores the decision, and wraps the context so that its timer is released
// once nothing refers to it (measured: 18 more).
func TestPropagatorAllocations(t *testing.T) {
	ctx, h := propagatorCase(t)
	prop := otelbudget.NewPropagator()
	inject := func(p propagation.TextMapPropagator) float64 {
		return testing.AllocsPerRun(200, func() { p.Inject(ctx, propagation.HeaderCarrier(http.Header{})) })
	}
	extract := func(p propagation.TextMapPropagator) float64 {
		// Each request's context ends, as net/http ends it after the
		// handler, which releases the deadline's timer.
		return testing.AllocsPerRun(200, func() {
			req, cancel := context.WithCancel(context.Background())
			_ = p.Extract(req, propagation.HeaderCarrier(h))
			cancel()
		})
	}
	const maxInjectExtra, maxExtractExtra = 1, 18
	if got, base := inject(prop), inject(propagation.Baggage{}); got-base > maxInjectExtra {
		t.Errorf("Inject: %v allocations, %v more than propagation.Baggage, want at most %d more", got, got-base, maxInjectExtra)
	}
	if got, base := extract(prop), extract(propagation.Baggage{}); got-base > maxExtractExtra {
		t.Errorf("Extract: %v allocations, %v more than propagation.Baggage, want at most %d more", got, got-base, maxExtractExtra)
	}
}
