package sdktest_test

import (
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/otelbudget"
	"github.com/timebudget/budget/wire"
)

// The request's class shows on its span as budget.criticality.
func TestCriticalityOnTheSpan(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := otelhttp.NewHandler(httpbudget.NewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		edge.WithObserver(r.obs), edge.WithPolicy(&wire.Policy{Default: time.Second})),
		"server", otelhttp.WithMeterProvider(r.meters), otelhttp.WithTracerProvider(r.traces))
	srv := httptest.NewServer(h)
	defer srv.Close()
	get(t, srv.URL, wire.HeaderRequestCriticality, "Sheddable")
	get(t, srv.URL)
	spans := r.spans.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	slices.SortFunc(spans, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	for i, want := range []string{"sheddable", "default"} {
		if v := spanAttrs(spans[i])[otelbudget.AttrCriticality]; v.AsString() != want {
			t.Errorf("request %d: budget.criticality = %q, want %q", i, v.AsString(), want)
		}
	}
}
