package httpbudget_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// TestWriteError: the public answer to an error has StatusOf's status, a
// generic text that says nothing of the error's message, and Budget-Expired
// on a 504 only.
func TestWriteError(t *testing.T) {
	t.Parallel()
	upstream := &url.Error{Op: "Get", URL: "http://127.0.0.1:40073/price?id=1&delay=slow", Err: context.DeadlineExceeded}
	for _, tc := range []struct {
		name    string
		err     error
		status  int
		text    string
		expired string // Budget-Expired, "" for none
	}{
		{"expired upstream call", &budget.Error{Stage: "pricing", Outcome: budget.OutcomeExpired, Err: upstream}, 504, "the request ran out of time", "pricing"},
		{"bare deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), 504, "the request ran out of time", "request"},
		{"refused", &budget.Error{Stage: "geometry", Outcome: budget.OutcomeInsufficient}, 504, "the request ran out of time", "geometry"},
		{"upstream expired", &budget.Error{Stage: "quotes", Outcome: budget.OutcomeExpired, Err: budget.Permanent(httpbudget.ErrUpstreamExpired)}, 504, "the request ran out of time", "quotes"},
		{"malformed", &wire.ParseError{}, 400, "malformed deadline header", ""},
		{"database", errors.New(`ERROR: relation "secret_table" does not exist (SQLSTATE 42P01)`), 500, "internal server error", ""},
		{"nil", nil, 500, "internal server error", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			rec.Header().Set("Content-Length", "99")
			httpbudget.WriteError(rec, tc.err)
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d", rec.Code, tc.status)
			}
			if got := strings.TrimSpace(rec.Body.String()); got != tc.text {
				t.Errorf("body %q, want %q", got, tc.text)
			}
			if got := rec.Header().Get("Budget-Expired"); got != tc.expired {
				t.Errorf("Budget-Expired %q, want %q", got, tc.expired)
			}
			if got := rec.Header().Get("Content-Length"); got != "" {
				t.Errorf("Content-Length %q kept", got)
			}
			if tc.err != nil && strings.Contains(rec.Body.String(), tc.err.Error()) {
				t.Errorf("the body shows the error's message")
			}
		})
	}
}

func ExampleWriteError() {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := &budget.Error{Stage: "pricing", Outcome: budget.OutcomeExpired,
			Err: &url.Error{Op: "Get", URL: "http://pricing.internal/price?api_key=SECRET", Err: context.DeadlineExceeded}}
		// Log err in full here; the client gets the public answer.
		httpbudget.WriteError(w, err)
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/quote", nil))
	fmt.Println(rec.Code, rec.Header().Get("Budget-Expired"))
	fmt.Print(rec.Body.String())
	// Output:
	// 504 pricing
	// the request ran out of time
}
