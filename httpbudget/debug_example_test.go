package httpbudget_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
)

// A server with the /debug/budget page on its mux. The op has learned that
// pricing takes about two seconds, so a request with one second left is
// refused before pricing starts, and the page shows the op refusing, the
// refusal counted by reason, and the request's ledger.
func ExampleDebugPage() {
	pricing := &budget.Op{Name: "pricing"}
	for range 20 {
		pricing.Estimator.Record(2 * time.Second)
	}
	debug := httpbudget.NewDebugPage()
	debug.Register(pricing)

	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := pricing.Do(r.Context(), func(context.Context) error { return nil })
		w.WriteHeader(httpbudget.StatusOf(r.Context(), err))
	})
	mux := http.NewServeMux()
	mux.Handle("/quote", httpbudget.NewHandler(app, edge.WithObserver(debug.Observer())))
	mux.Handle("/debug/budget", debug)

	req := httptest.NewRequest(http.MethodGet, "/quote", nil)
	req.Header.Set("Request-Timeout-Ms", "1000")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	fmt.Println("quote:", rec.Code)

	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/budget?format=json", nil))
	var page struct {
		Ops []struct {
			Name, State string
			Suggested   float64 `json:"suggested_timeout_ms"`
		}
		Refusals []struct {
			Reason string
			Total  int
		}
		Recent []struct {
			Events []struct{ Kind, Stage string }
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		panic(err)
	}
	for _, op := range page.Ops {
		fmt.Printf("op %s: %s, suggested timeout about %.0f s\n", op.Name, op.State, op.Suggested/1000)
	}
	for _, r := range page.Refusals {
		fmt.Printf("refusals, %s: %d\n", r.Reason, r.Total)
	}
	for _, ev := range page.Recent[0].Events {
		fmt.Println("ledger:", ev.Kind, ev.Stage)
	}
	// Output:
	// quote: 504
	// op pricing: refusing, suggested timeout about 6 s
	// refusals, insufficient: 1
	// ledger: arrival request
	// ledger: refuse pricing
}

// The page never shows a URL's query string or user info; its Redact hook
// hides more, here the internal host name.
func ExampleDebugPage_redact() {
	debug := httpbudget.NewDebugPage()
	debug.Redact = func(s string) string { return strings.ReplaceAll(s, "pricing.internal", "<host>") }
	ctx, cancel := budget.Config{Observer: debug.Observer()}.Start(context.Background(), time.Second)
	defer cancel()
	op := &budget.Op{Name: "pricing"}
	_ = op.Do(ctx, func(context.Context) error {
		return &url.Error{Op: "Get", URL: "http://pricing.internal/price?api_key=SECRET", Err: context.DeadlineExceeded}
	})

	rec := httptest.NewRecorder()
	debug.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/budget?format=json", nil))
	var page struct {
		Recent []struct {
			Events []struct {
				Err string `json:"error"`
			} `json:"events"`
		} `json:"recent"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &page)
	for _, ev := range page.Recent[0].Events {
		if ev.Err != "" {
			fmt.Println(ev.Err)
		}
	}
	// Output: Get "http://<host>/price": context deadline exceeded
}
