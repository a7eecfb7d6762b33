package otelbudget_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/timebudget/budget/otelbudget"
	"github.com/timebudget/budget/wire"
)

func ExampleNewPropagator() {
	// Every service installs it once, in place of propagation.Baggage; a
	// service that runs otelhttp alone forwards the member untouched.
	policy := &wire.Policy{Max: 5 * time.Second}
	prop := otelbudget.NewPropagator(otelbudget.WithPolicy(policy))
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, prop))

	// The sending side: a request whose context has 2 s left.
	deadline := time.Now().Add(2 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	header := http.Header{}
	prop.Inject(ctx, propagation.HeaderCarrier(header))
	fmt.Println(header.Get("baggage") == otelbudget.BaggageKey+"="+fmt.Sprint(deadline.UnixMilli()))

	// The receiving side, one hop or several later.
	in := prop.Extract(context.Background(), propagation.HeaderCarrier(header))
	got, _ := in.Deadline()
	dec, _ := otelbudget.BaggageDecision(in)
	fmt.Println(deadline.Sub(got) < time.Millisecond, dec.SourceName())
	// Output:
	// true
	// true Request-Deadline
}
