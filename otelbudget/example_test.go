package otelbudget_test

import (
	"context"
	"fmt"
	"github.com/timebudget/budget/edge"
	"net/http"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/otelbudget"
)

// A server whose budgets are reported to the global OpenTelemetry meter
// provider (set it with otel.SetMeterProvider to an SDK provider with the
// Prometheus exporter or an OTLP reader), and whose Ops report through the
// same observer.
func Example() {
	observer, err := otelbudget.NewObserver() // the global meter provider
	if err != nil {
		fmt.Println(err)
		return
	}
	prices := &budget.Op{Name: "prices", Observer: observer}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := prices.Do(r.Context(), func(ctx context.Context) error { return nil }); err != nil {
			httpbudget.WriteError(w, err)
			return
		}
		fmt.Fprintln(w, "hello")
	})
	http.Handle("/", httpbudget.NewHandler(app, edge.WithObserver(observer)))
}
