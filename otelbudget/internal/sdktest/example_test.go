package sdktest_test

import (
	"bufio"
	"fmt"
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/otelbudget"
)

// A server that reports its budgets to Prometheus through the OpenTelemetry
// Prometheus exporter, and serves them on /metrics. A request that arrives
// with its deadline already passed is refused, and the refusal is counted in
// budget_refusals_total.
func Example() {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo())
	if err != nil {
		panic(err)
	}
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	observer, err := otelbudget.NewObserver(otelbudget.WithMeterProvider(meters))
	if err != nil {
		panic(err)
	}

	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	mux := http.NewServeMux()
	mux.Handle("/", httpbudget.NewHandler(app, edge.WithObserver(observer)))
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	req.Header.Set("Request-Timeout-Ms", "0") // the caller's deadline has passed
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)

	resp, err = http.Get(srv.URL + "/metrics")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "budget_refusals_total{") {
			fmt.Println(lines.Text())
		}
	}
	// Output:
	// 504 Gateway Timeout
	// budget_refusals_total{reason="expired",stage="request"} 1
}
