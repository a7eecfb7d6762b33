package httpbudget_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
)

// secrets are what a request URL may carry and no page or header may show.
var secrets = []string{"SECRET123", "api_key", "hunter2"}

// TestDebugPageRedactsURLs: an expired call to a URL with an API key in its
// query string and a password in its user info shows neither on the page,
// in HTML or JSON; the URL's host and path stay, and the page's Redact hook
// can hide more.
func TestDebugPageRedactsURLs(t *testing.T) {
	t.Parallel()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	target := strings.Replace(hang.URL, "http://", "http://user:hunter2@", 1) + "/x?api_key=SECRET123"
	for _, tc := range []struct {
		name   string
		redact func(string) string
		shown  string // what the page must still show of the URL
		hidden string // what the hook hides
	}{
		{"default", nil, strings.TrimPrefix(hang.URL, "http://") + "/x", ""},
		{"hook", func(s string) string { return strings.ReplaceAll(s, "/x", "/…") }, "/…", "/x\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			page := httpbudget.NewDebugPage()
			page.Redact = tc.redact
			srv := httptest.NewServer(page)
			t.Cleanup(srv.Close)
			ctx, cancel := budget.Config{Observer: page.Observer()}.Start(context.Background(), 50*time.Millisecond)
			defer cancel()
			client := &http.Client{Transport: httpbudget.NewTransport(nil, httpbudget.WithLinger(-1))}
			op := &budget.Op{Name: "pricing"}
			err := op.Do(ctx, func(ctx context.Context) error {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
				resp, err := client.Do(req)
				if err == nil {
					_ = resp.Body.Close()
				}
				return err
			})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the call: %v, want an expiry", err)
			}
			for _, accept := range []string{"text/html", "application/json"} {
				_, body := fetch(t, srv.URL, accept)
				if !strings.Contains(body, tc.shown) {
					t.Errorf("%s: the page does not show %q of the failed call:\n%s", accept, tc.shown, body)
				}
				for _, s := range append(secrets, tc.hidden) {
					if s != "" && strings.Contains(body, s) {
						t.Errorf("%s: the page shows %q", accept, s)
					}
				}
			}
		})
	}
}

// TestBudgetExpiredIsRedacted: a Budget-Expired value that names a URL loses
// its query string and user info, both in the header WriteError sends and
// in the stage of the error a Transport makes of an upstream's header.
func TestBudgetExpiredIsRedacted(t *testing.T) {
	t.Parallel()
	const stage = "http://user:hunter2@pricing.internal/x?api_key=SECRET123"
	const want = "http://pricing.internal/x"
	t.Run("WriteError", func(t *testing.T) {
		t.Parallel()
		rec := httptest.NewRecorder()
		httpbudget.WriteError(rec, &budget.Error{Stage: stage, Outcome: budget.OutcomeExpired})
		if got := rec.Header().Get("Budget-Expired"); got != want {
			t.Errorf("Budget-Expired: %q, want %q", got, want)
		}
	})
	t.Run("Transport", func(t *testing.T) {
		t.Parallel()
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Budget-Expired", stage)
			w.WriteHeader(http.StatusGatewayTimeout)
		}))
		t.Cleanup(up.Close)
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, up.URL, nil)
		_, err := (&http.Client{Transport: httpbudget.NewTransport(nil)}).Do(req)
		var be *budget.Error
		if !errors.As(err, &be) {
			t.Fatalf("err = %v, want a *budget.Error", err)
		}
		if be.Stage != want {
			t.Errorf("stage %q, want %q", be.Stage, want)
		}
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("the error shows %q: %v", s, err)
			}
		}
	})
}
