package httpbudget_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

var bare = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})

// nopWriter is a ResponseWriter that keeps nothing, so the benchmarks measure
// the middleware rather than a recorder.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nopWriter) WriteHeader(int)             {}

func benchRequest() *http.Request {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Request-Timeout-Ms", "1500")
	req.Header.Set("Request-Deadline", "1700000001500")
	req.Header.Set("User-Agent", "bench")
	req.Header.Set("Accept", "*/*")
	return req
}

func benchServe(b *testing.B, h http.Handler) {
	b.ReportAllocs()
	req := benchRequest()
	w := &nopWriter{h: http.Header{}}
	for b.Loop() {
		h.ServeHTTP(w, req)
	}
}

// BenchmarkBareHandler is the floor: the handler called directly.
func BenchmarkBareHandler(b *testing.B) { benchServe(b, bare) }

// BenchmarkTimeoutHandler is the baseline: the standard library's per-handler
// timeout, the usual way to bound a handler without a budget.
func BenchmarkTimeoutHandler(b *testing.B) {
	benchServe(b, http.TimeoutHandler(bare, 1500*time.Millisecond, "timeout"))
}

// BenchmarkMiddleware is NewHandler with the default policy over the bare
// handler, for a request carrying our two headers.
func BenchmarkMiddleware(b *testing.B) { benchServe(b, httpbudget.NewHandler(bare)) }

// BenchmarkMiddlewareNoLedger is the same without a per-request ledger.
func BenchmarkMiddlewareNoLedger(b *testing.B) {
	benchServe(b, httpbudget.NewHandler(bare, httpbudget.WithLedgerCapacity(-1)))
}

// BenchmarkTransport is the client side: headers set on a copy of the
// request, over a base transport that answers at once.
func BenchmarkTransport(b *testing.B) {
	b.ReportAllocs()
	resp := &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}
	tr := httpbudget.NewTransport(roundTripFunc(func(*http.Request) (*http.Response, error) { return resp, nil }))
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
	for b.Loop() {
		if _, err := tr.RoundTrip(req); err != nil {
			b.Fatal(err)
		}
	}
}

func TestMiddlewareAllocations(t *testing.T) {
	req := benchRequest()
	w := &nopWriter{h: http.Header{}}
	allocs := func(h http.Handler) float64 {
		return testing.AllocsPerRun(500, func() { h.ServeHTTP(w, req) })
	}
	base := allocs(bare)
	// context.WithDeadlineCause's four (its context, timer and closures),
	// one block for the budget's context, state and ledger, the request
	// copy carrying the new context, and the ResponseWriter wrapper that
	// lets the middleware answer 504 for a handler that ran out of budget
	// and wrote nothing: 7 measured. DESIGN.md's target is 6; the seventh
	// is the price of never reading an expired budget as a 200 OK. Pooling
	// the wrapper would save it, but a handler's goroutine that writes after
	// returning (a bug net/http tolerates) would then write into another
	// request's response.
	const maxAllocs = 7
	if got := allocs(httpbudget.NewHandler(bare)) - base; got > maxAllocs {
		t.Errorf("middleware adds %v allocations, want at most %d", got, maxAllocs)
	}
	if got := allocs(httpbudget.NewHandler(bare, httpbudget.WithLedgerCapacity(-1))) - base; got > maxAllocs {
		t.Errorf("middleware without a ledger adds %v allocations, want at most %d", got, maxAllocs)
	}
	// A refused request allocates its response only: three header values,
	// the error and its message, the body: 7 measured.
	shed := httpbudget.NewHandler(bare, httpbudget.WithPolicy(&wire.Policy{Min: time.Hour}))
	if got := allocs(shed); got > 7 {
		t.Errorf("a shed request allocates %v times, want at most 7", got)
	}
}
