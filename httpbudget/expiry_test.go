package httpbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// giveUp waits for the request's budget to run out, as the most common Go
// handler does, and then does what each case says.
func giveUp(then func(w http.ResponseWriter)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		then(w)
	})
}

// TestHandlerAnswersAnExpiredBudget504 is the regression test for a hung
// handler that gives up on ctx.Done and writes nothing: net/http answered it
// with an empty 200 OK, which a caller read as success.
func TestHandlerAnswersAnExpiredBudget504(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		h       http.Handler
		code    int
		expired bool // Budget-Expired in the header
		trailer bool // Budget-Expired in the trailer
	}{
		{"gives up, writes nothing", giveUp(func(http.ResponseWriter) {}), http.StatusGatewayTimeout, true, false},
		{"gives up, writes only a status", giveUp(func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
		}), http.StatusGatewayTimeout, true, false},
		{"gives up, writes part of a body", giveUp(func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, "partial")
		}), http.StatusOK, false, true},
		{"flushed a status, then gave up", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}), http.StatusAccepted, false, true},
		{"answers in time, writes nothing", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), http.StatusOK, false, false},
		{"answers in time, writes a status", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		}), http.StatusNoContent, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				h := httpbudget.NewHandler(tc.h, edge.WithStage("checkout"))
				rec := serve(h, map[string]string{"Request-Timeout-Ms": "50"})
				res := rec.Result()
				if res.StatusCode != tc.code {
					t.Fatalf("status %d, want %d", res.StatusCode, tc.code)
				}
				if got := res.Header.Get("Budget-Expired") != ""; got != tc.expired {
					t.Errorf("Budget-Expired header present: %v, want %v", got, tc.expired)
				}
				if got := res.Trailer.Get("Budget-Expired") != ""; got != tc.trailer {
					t.Errorf("Budget-Expired trailer present: %v, want %v (trailers %v)", got, tc.trailer, res.Trailer)
				}
				if tc.expired && res.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
					t.Errorf("Content-Type %q, want the refusal's text/plain", res.Header.Get("Content-Type"))
				}
			})
		})
	}
}

// TestTransportNeverReadsAnExpiredBudgetAsSuccess sends requests through
// NewTransport to a NewHandler whose handler hangs until its budget ends:
// every one must come back as an error, never as a 200 OK.
func TestTransportNeverReadsAnExpiredBudgetAsSuccess(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(httpbudget.NewHandler(giveUp(func(http.ResponseWriter) {})))
	defer srv.Close()
	client := &http.Client{Transport: httpbudget.NewTransport(srv.Client().Transport)}
	defer client.CloseIdleConnections()
	const n = 10
	var answered int
	for i := range n {
		ctx, cancel := budget.Start(context.Background(), 30*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		cancel()
		if err == nil {
			_ = resp.Body.Close()
			t.Errorf("request %d: %s, want an error", i, resp.Status)
			continue
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("request %d: %v, want an expiry", i, err)
		}
		if errors.Is(err, httpbudget.ErrUpstreamExpired) {
			answered++
		}
	}
	// Which side sees the end first depends on the machine's load; the
	// answer margin makes it the server's answer in the common case.
	t.Logf("%d of %d expiries answered by the server with Budget-Expired", answered, n)
}

// TestHandlerKeepsAnAnswerMargin checks that the handler's deadline sits the
// answer margin before the caller's, so the handler stops first and its
// answer reaches the caller in time.
func TestHandlerKeepsAnAnswerMargin(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		opts   []edge.ServerOption
		header string
		want   time.Duration
	}{
		{"adaptive, nothing seen yet: 1 ms", nil, "100", 99 * time.Millisecond},
		{"at most 1/10 of a small budget", nil, "8", 7200 * time.Microsecond},
		{"fixed", []edge.ServerOption{edge.WithAnswerMargin(3 * time.Millisecond)}, "100", 97 * time.Millisecond},
		{"off", []edge.ServerOption{edge.WithAnswerMargin(-1)}, "100", 100 * time.Millisecond},
		{"a larger reserve wins", []edge.ServerOption{edge.WithPolicy(&wire.Policy{AnswerMargin: 5 * time.Millisecond})}, "100", 95 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var s seen
				serve(httpbudget.NewHandler(probeHandler(&s), tc.opts...), map[string]string{"Request-Timeout-Ms": tc.header})
				if !s.deadline || s.remaining != tc.want {
					t.Errorf("handler had %v (deadline %v), want %v", s.remaining, s.deadline, tc.want)
				}
			})
		})
	}
}

// TestHandlerMarginLearnsLateness checks that the adaptive margin grows
// after answers left late past the handler's deadline.
func TestHandlerMarginLearnsLateness(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var s seen
		late := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("probe") != "" {
				probeHandler(&s).ServeHTTP(w, r)
				return
			}
			<-r.Context().Done()
			time.Sleep(4 * time.Millisecond) // the answer leaves late
		})
		h := httpbudget.NewHandler(late)
		for range 8 {
			serve(h, map[string]string{"Request-Timeout-Ms": "1000"})
		}
		req := httptest.NewRequest(http.MethodGet, "/?probe=1", nil)
		req.Header.Set("Request-Timeout-Ms", "1000")
		h.ServeHTTP(httptest.NewRecorder(), req)
		if margin := time.Second - s.remaining; margin < 5*time.Millisecond || margin > 10*time.Millisecond {
			t.Errorf("margin after answers 4 ms late: %v, want between 5 and 10 ms", margin)
		}
	})
}

// TestHandlerKeepsTheResponseController checks that the handler can still
// flush, set deadlines and hijack through the middleware's writer.
func TestHandlerKeepsTheResponseController(t *testing.T) {
	t.Parallel()
	h := httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			t.Errorf("SetWriteDeadline: %v", err)
		}
		if r.URL.Path == "/flush" {
			if err := rc.Flush(); err != nil {
				t.Errorf("Flush: %v", err)
			}
			return
		}
		conn, rw, err := rc.Hijack()
		if err != nil {
			t.Errorf("Hijack: %v", err)
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 418 I'm a teapot\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		_ = rw.Flush()
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := httpbudget.NewTransport(srv.Client().Transport)
	for path, want := range map[string]int{"/flush": http.StatusOK, "/hijack": http.StatusTeapot} {
		ctx, cancel := budget.Start(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		resp, err := client.RoundTrip(req)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: status %d, want %d", path, resp.StatusCode, want)
		}
	}
	srv.Client().CloseIdleConnections()
}
