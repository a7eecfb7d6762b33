package httpbudget_test

import (
	"fmt"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// TestMiddlewareIsNewHandler checks that the middleware form applies the same
// policy as NewHandler: the edge's fresh budget whatever the client sends,
// and a refusal on arrival that never runs the handler.
func TestMiddlewareIsNewHandler(t *testing.T) {
	t.Parallel()
	public := &wire.Policy{Trust: wire.SourcesNone, Default: 300 * time.Millisecond, Max: time.Second}
	tests := []struct {
		name       string
		policy     *wire.Policy
		header     map[string]string
		wantStatus int
		wantRan    bool
		wantLeft   time.Duration // at most; zero when the handler must not run
	}{
		{"edge ignores the client's header", public, map[string]string{"Request-Timeout-Ms": "5"}, http.StatusOK, true, 300 * time.Millisecond},
		{"trusted header is applied", &wire.Policy{}, map[string]string{"Request-Timeout-Ms": "40"}, http.StatusOK, true, 40 * time.Millisecond},
		{"expired request is refused", &wire.Policy{}, map[string]string{"Request-Timeout-Ms": "0"}, http.StatusGatewayTimeout, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s seen
			mw := httpbudget.NewMiddleware(edge.WithPolicy(tt.policy), edge.WithStage("edge"))
			rec := serve(mw(probeHandler(&s)), tt.header)
			if rec.Code != tt.wantStatus || s.ran != tt.wantRan {
				t.Fatalf("status %d, ran %v; want %d, %v", rec.Code, s.ran, tt.wantStatus, tt.wantRan)
			}
			if tt.wantRan && (!s.deadline || s.remaining > tt.wantLeft || s.remaining < tt.wantLeft/2) {
				t.Errorf("handler saw deadline %v with %v left, want about %v", s.deadline, s.remaining, tt.wantLeft)
			}
			if !tt.wantRan && rec.Header().Get("Budget-Expired") != "edge" {
				t.Errorf("Budget-Expired = %q, want edge", rec.Header().Get("Budget-Expired"))
			}
		})
	}
}

// ExampleNewMiddleware wraps a handler the way routers that take
// func(http.Handler) http.Handler (chi, gorilla/mux) do.
func ExampleNewMiddleware() {
	// A public edge: whatever a client sends, each request gets 300 ms.
	front := httpbudget.NewMiddleware(edge.WithPolicy(&wire.Policy{
		Trust: wire.SourcesNone, Default: 300 * time.Millisecond, Max: time.Second,
	}))
	h := front(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		left, ok := budget.Remaining(r.Context())
		_, _ = fmt.Fprintln(w, ok, left <= 300*time.Millisecond)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	body, _ := io.ReadAll(rec.Body)
	fmt.Print(string(body))
	// Output: true true
}
