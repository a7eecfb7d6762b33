package httpbudget_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// hop is a server that calls next through a Transport under a Retry of 3
// attempts and answers its failure with WriteError.
func hop(t *testing.T, next string) *httptest.Server {
	client := &http.Client{Transport: httpbudget.NewTransport(nil)}
	op := &budget.Op{Name: "next"}
	srv := httptest.NewServer(httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := (&budget.Retry{MaxAttempts: 3, Backoff: -1}).Do(r.Context(), op, func(ctx context.Context) error {
			return get(ctx, client, next)
		})
		if err != nil {
			httpbudget.WriteError(w, err)
		}
	})))
	t.Cleanup(srv.Close)
	return srv
}

// get sends a GET to url and turns a failed status into an error.
func get(ctx context.Context, c *http.Client, url string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("%s: %d", url, resp.StatusCode)
	}
	return nil
}

// Three hops that each make 3 attempts, over a dependency that fails every
// call: the hop nearest the failure retries, and says so with
// Budget-No-Retry: retried, so the hops above do not. Before the marker the
// dependency saw 27 calls.
func TestRetriesHappenAtTheHopNearestTheFailure(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	bottom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer bottom.Close()
	top := hop(t, hop(t, hop(t, bottom.URL).URL).URL)
	ctx, cancel := budget.Start(context.Background(), 10*time.Second)
	defer cancel()
	client := &http.Client{Transport: httpbudget.NewTransport(nil)}
	tries := 0
	err := (&budget.Retry{MaxAttempts: 3, Backoff: -1}).Do(ctx, &budget.Op{Name: "top"}, func(ctx context.Context) error {
		tries++
		return get(ctx, client, top.URL)
	})
	if n := calls.Load(); n != 3 || tries != 1 {
		t.Fatalf("%d calls at the bottom, %d at the top; want 3 and 1", n, tries)
	}
	if s, _ := budget.SentOf(err); !errors.Is(err, httpbudget.ErrNoRetry) || s != budget.Executed || !budget.GaveUp(err) ||
		!strings.Contains(err.Error(), "asked not to retry") {
		t.Fatalf("error %v (sent %v); want ErrNoRetry, executed, gave up", err, s)
	}
}

// A request refused on arrival (too little time, or already expired, or
// refused by the handler's op) is answered with Budget-No-Retry: shed, and
// the Transport reports it as refused by the server and does not retry it;
// a handler that ran out of time, and a malformed header, are not marked.
func TestHandlerMarksARefusalOnArrival(t *testing.T) {
	t.Parallel()
	ran := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	cases := []struct {
		name    string
		h       http.Handler
		timeout string
		shed    bool
		sent    budget.Sent
	}{
		{"too little time", httpbudget.NewHandler(ran, edge.WithPolicy(&wire.Policy{Min: time.Second})), "100", true, budget.ServerRefused},
		{"expired", httpbudget.NewHandler(ran), "0", true, budget.ServerRefused},
		{"refused by the op", httpbudget.NewHandler(ran, edge.WithAdmission(func(string) *budget.Op {
			return &budget.Op{Name: "slow", MinUseful: time.Hour}
		})), "5000", true, budget.ServerRefused},
		{"handler ran out of time", httpbudget.NewHandler(giveUp(func(http.ResponseWriter) {})), "50", false, budget.Executed},
		{"malformed, strict", httpbudget.NewHandler(ran, edge.WithPolicy(&wire.Policy{Strict: true})), "x", false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			r.Header.Set(wire.HeaderRequestTimeout, c.timeout)
			c.h.ServeHTTP(w, r)
			if got := w.Header().Get(wire.HeaderBudgetNoRetry); (got == "shed") != c.shed || !c.shed && got != "" {
				t.Fatalf("status %d, Budget-No-Retry %q; want shed %v", w.Code, got, c.shed)
			}
			if c.sent == 0 {
				return
			}
			answer := roundTripFunc(func(*http.Request) (*http.Response, error) {
				return w.Result(), nil
			})
			ctx, cancel := budget.Start(context.Background(), time.Minute)
			defer cancel()
			calls := 0
			err := (&budget.Retry{Backoff: -1}).Do(ctx, &budget.Op{Name: "svc"}, func(ctx context.Context) error {
				calls++
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://svc.test/", nil)
				_, err := httpbudget.NewTransport(answer).RoundTrip(req)
				return err
			})
			if s, _ := budget.SentOf(err); s != c.sent || calls != 1 || budget.GaveUp(err) != c.shed {
				t.Fatalf("%d calls, error %v: sent %v, gave up %v; want %v", calls, err, s, budget.GaveUp(err), c.sent)
			}
		})
	}
}

// WriteError stamps Budget-No-Retry: retried on the error of a Retry that
// gave up, and nothing on other errors.
func TestWriteErrorMarksAGiveUp(t *testing.T) {
	t.Parallel()
	boom := errors.New("db down")
	ctx, cancel := budget.Start(context.Background(), time.Minute)
	defer cancel()
	spent := (&budget.Retry{MaxAttempts: 2, Backoff: -1}).Do(ctx, &budget.Op{Name: "db"}, func(context.Context) error { return boom })
	for _, c := range []struct {
		err  error
		want string
	}{
		{spent, "retried"},
		{fmt.Errorf("handler: %w", spent), "retried"},
		{budget.DoNotRetry(boom, budget.ServerRefused), "retried"},
		{boom, ""},
		{budget.Permanent(boom), ""},
		{context.DeadlineExceeded, ""},
	} {
		w := httptest.NewRecorder()
		httpbudget.WriteError(w, c.err)
		if got := w.Header().Get(wire.HeaderBudgetNoRetry); got != c.want {
			t.Errorf("WriteError(%v): Budget-No-Retry %q, want %q", c.err, got, c.want)
		}
	}
}

// The Transport reads the marker on failed answers only, and any value of
// it, even one it cannot parse, means no retry.
func TestTransportReadsBudgetNoRetry(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status int
		vals   []string
		sent   budget.Sent // 0: the answer is returned as it is
	}{
		{"shed", 503, []string{"shed"}, budget.ServerRefused},
		{"retried", 500, []string{"retried"}, budget.Executed},
		{"unknown token", 503, []string{"later"}, budget.Executed},
		{"10 KB", 503, []string{strings.Repeat("shed", 10<<8)}, budget.Executed},
		{"several values", 503, []string{"shed", "shed"}, budget.Executed},
		{"control characters", 503, []string{"shed\x00\x7f"}, budget.Executed},
		{"on a success", 200, []string{"shed"}, 0},
		{"absent", 503, nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			base := roundTripFunc(func(*http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: c.status, Body: http.NoBody,
					Header: http.Header{wire.HeaderBudgetNoRetry: c.vals}}, nil
			})
			ctx, cancel := budget.Start(context.Background(), time.Minute)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
			resp, err := httpbudget.NewTransport(base).RoundTrip(req)
			if c.sent == 0 {
				if err != nil || resp.StatusCode != c.status {
					t.Fatalf("answer %v, error %v; want the answer", resp, err)
				}
				return
			}
			s, _ := budget.SentOf(err)
			if resp != nil || s != c.sent || !errors.Is(err, httpbudget.ErrNoRetry) || !budget.IsPermanent(err) ||
				!strings.Contains(err.Error(), fmt.Sprint(c.status)) || strings.ContainsAny(err.Error(), "\x00\x7f") {
				t.Fatalf("error %v (sent %v); want ErrNoRetry, %v", err, s, c.sent)
			}
		})
	}
}
