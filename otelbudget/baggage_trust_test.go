package otelbudget_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/otelbudget"
	"github.com/timebudget/budget/wire"
)

// TestBaggageUnderEdgeTrust: the class a caller puts in its baggage is read
// under the trust rule of the edge it arrives at, with no policy given to
// the propagator. At an edge that trusts nothing and sets sheddable,
// budget-criticality=critical does not make the handler's request critical,
// with or without a Request-Criticality header beside it; behind a trusted
// edge it still counts. Before, the propagator's own default policy read it
// and the edge kept the class it found on the context.
func TestBaggageUnderEdgeTrust(t *testing.T) {
	t.Parallel()
	prop := otelbudget.NewPropagator()
	edgePolicy := &wire.Policy{Trust: wire.SourcesNone, Criticality: wire.CriticalitySheddable, Max: time.Second}
	for _, tc := range []struct {
		name   string
		policy *wire.Policy
		header string // Request-Criticality, or none
		want   budget.Criticality
	}{
		{"edge trusts nothing", edgePolicy, "", budget.Sheddable},
		{"edge trusts nothing, header beside", edgePolicy, "sheddable", budget.Sheddable},
		{"edge trusts deadlines only", &wire.Policy{Trust: wire.SourcesOurs}, "", budget.DefaultCriticality},
		{"trusted edge", &wire.Policy{}, "", budget.Critical},
		{"trusted edge, header wins", &wire.Policy{}, "sheddable", budget.Sheddable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := make(chan budget.Criticality, 1)
			h := httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got <- budget.CriticalityFrom(r.Context())
			}), edge.WithPolicy(tc.policy))
			withBaggage := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
				h.ServeHTTP(w, r.WithContext(ctx))
			})
			req := httptest.NewRequest("GET", "/", nil)
			req.Header.Set("Baggage", otelbudget.BaggageCriticalityKey+"=critical")
			if tc.header != "" {
				req.Header.Set(wire.HeaderRequestCriticality, tc.header)
			}
			req = req.WithContext(context.Background())
			withBaggage.ServeHTTP(httptest.NewRecorder(), req)
			if c := <-got; c != tc.want {
				t.Errorf("handler's class %v, want %v", c, tc.want)
			}
		})
	}
}
