package sdktest_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/otelbudget"
	"github.com/timebudget/budget/wire"
)

// TestPrometheusScrape serves the exporter's registry on /metrics, drives
// the scenarios, scrapes it as Prometheus would (OpenMetrics, which carries
// exemplars) and finds every budget_* series with its units and labels, and
// the trace exemplar of a refusal.
func TestPrometheusScrape(t *testing.T) {
	t.Parallel()
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		t.Fatal(err)
	}
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer func() { _ = meters.Shutdown(context.Background()) }()
	traces := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer func() { _ = traces.Shutdown(context.Background()) }()
	obs, err := otelbudget.NewObserver(otelbudget.WithMeterProvider(meters))
	if err != nil {
		t.Fatal(err)
	}

	app := httpbudget.NewHandler(scenarios(), edge.WithObserver(obs))
	traced := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := traces.Tracer("test").Start(r.Context(), "request")
		defer span.End()
		app.ServeHTTP(w, r.WithContext(ctx))
	})
	mux := http.NewServeMux()
	mux.Handle("/", traced)
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, path := range []string{"/ok", "/expire", "/refuse", "/ladder", "/retry", "/hedge", "/queue", "/detach"} {
		get(t, srv.URL+path, wire.HeaderRequestTimeout, "2000")
	}
	get(t, srv.URL+"/orphan", wire.HeaderRequestTimeout, orphanBudget)
	get(t, srv.URL+"/ok", wire.HeaderRequestTimeout, "0")

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	page := string(body)
	// The exporter writes an exemplar's labels in map order.
	for _, want := range []string{
		`budget_remaining_seconds_bucket{event="arrival",.*stage="request",le="0.001"}`,
		`budget_remaining_seconds_count{event="attempt",.*stage="fast"}`,
		`budget_queue_wait_seconds_bucket{.*outcome="ok",.*stage="queue"`,
		`budget_used_bucket{.*outcome="expired",.*stage="slow"`,
		`budget_refusals_total{.*reason="insufficient",stage="costly"} 2`,
		`budget_refusals_total{.*reason="retry_suppressed",stage="flaky"} 1`,
		`budget_refusals_total{.*reason="expired",stage="request"} 1(\.0)? # \{(trace_id="[0-9a-f]{32}",span_id="[0-9a-f]{16}"|span_id="[0-9a-f]{16}",trace_id="[0-9a-f]{32}")\} 1`,
		`budget_expiries_total{.*stage="slow"} 1`,
		`budget_hedges_total{.*stage="hedged"} 1`,
		`budget_queue_drops_total{.*reason="canceled",stage="queue"} 1`,
		`budget_detached_total{.*stage="audit"} 1`,
		`budget_orphaned_total{.*stage="stubborn"} 1`,
	} {
		if !regexp.MustCompile(`(?m)^` + want).MatchString(page) {
			t.Errorf("no series matching %s", want)
		}
	}
	if t.Failed() {
		var budgetLines []string
		for _, l := range strings.Split(page, "\n") {
			if strings.HasPrefix(l, "budget_") && !strings.Contains(l, "_bucket") {
				budgetLines = append(budgetLines, l)
			}
		}
		t.Logf("budget series scraped:\n%s", strings.Join(budgetLines, "\n"))
	}
}
