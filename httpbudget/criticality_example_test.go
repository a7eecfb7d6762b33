package httpbudget_test

import (
	"fmt"
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// A public edge ignores the class a client sends and classifies by route;
// the handler, and every call it makes through a Transport, runs with it.
func ExampleWithClassifier() {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, budget.CriticalityFrom(r.Context()))
	})
	edge := httpbudget.NewHandler(handler,
		edge.WithPolicy(&wire.Policy{Trust: wire.SourcesNone, Max: 2 * time.Second}),
		httpbudget.WithClassifier(func(r *http.Request) budget.Criticality {
			if strings.HasPrefix(r.URL.Path, "/checkout") {
				return budget.Critical
			}
			return budget.Sheddable
		}))
	for _, path := range []string{"/checkout", "/recommendations"} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set(wire.HeaderRequestCriticality, "critical") // untrusted at an edge
		edge.ServeHTTP(rec, r)
		fmt.Print(path, " ", rec.Body.String())
	}
	// Output:
	// /checkout critical
	// /recommendations sheddable
}
