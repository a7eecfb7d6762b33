package httpbudget_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

func ExampleNewHandler() {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		left, _ := budget.Remaining(r.Context())
		io.WriteString(w, "handler has "+left.Round(100*time.Millisecond).String()+"\n")
	})
	h := httpbudget.NewHandler(handler, edge.WithStage("checkout"),
		edge.WithPolicy(&wire.Policy{Max: 2 * time.Second, Min: 50 * time.Millisecond, AnswerMargin: 100 * time.Millisecond}))

	for _, timeout := range []string{"5000", "20"} {
		req := httptest.NewRequest(http.MethodGet, "/checkout", nil)
		req.Header.Set("Request-Timeout-Ms", timeout)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("Budget-Expired"), strings.TrimSpace(rec.Body.String()))
	}
	// Output:
	// 200  handler has 1.9s
	// 504 checkout budget: checkout refused on arrival: too little time left
}

// A client and a server that both speak the budget: the server gives up a
// margin before the client's deadline and answers 504 with Budget-Expired,
// which the client's Transport reports as an error no layer retries, inside
// the client's budget.
func ExampleNewTransport() {
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // gives up when the budget ends, writes nothing
	})
	srv := httptest.NewServer(httpbudget.NewHandler(hang, edge.WithStage("pricing"),
		edge.WithAnswerMargin(400*time.Millisecond)))
	defer srv.Close()

	client := &http.Client{Transport: httpbudget.NewTransport(nil, edge.WithClientStage("pricing"))}
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	_, err := client.Do(req)
	fmt.Println(errors.Is(err, httpbudget.ErrUpstreamExpired), errors.Is(err, context.DeadlineExceeded), ctx.Err() == nil)
	// Output:
	// true true true
}
