package httpbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// dropAfterRead is a server that reads each request whole, counts it (and
// the Idempotency-Key it carried), and closes the connection without an
// answer: the request certainly reached the handler, and the client cannot
// know whether the work ran.
type dropAfterRead struct {
	mu   sync.Mutex
	runs int
	keys []string
}

func (d *dropAfterRead) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	d.mu.Lock()
	d.runs++
	d.keys = append(d.keys, r.Header.Get(wire.HeaderIdempotencyKey))
	d.mu.Unlock()
	panic(http.ErrAbortHandler) // net/http closes the connection, sending nothing
}

func (d *dropAfterRead) seen() (int, []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.runs, append([]string(nil), d.keys...)
}

// A POST whose connection ended after it was written may have run, so a
// Retry does not send it again: before the Transport classified its errors,
// the handler ran three times. A GET (idempotent) and a POST carrying an
// idempotency key are retried, the key the same on every attempt.
func TestRetryDoesNotRepeatAPostThatMayHaveRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		method  string
		key     bool
		runs    int
		outcome budget.Outcome
	}{
		{"POST", http.MethodPost, false, 1, budget.OutcomeUncertain},
		{"GET", http.MethodGet, false, 3, budget.OutcomeNone},
		{"POST with a key", http.MethodPost, true, 3, budget.OutcomeNone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := &dropAfterRead{}
			srv := httptest.NewServer(d)
			defer srv.Close()
			client := &http.Client{Transport: httpbudget.NewTransport(nil)}
			ctx, cancel := budget.Start(context.Background(), 30*time.Second)
			defer cancel()
			if c.key {
				ctx = budget.WithIdempotencyKey(ctx)
			}
			r := &budget.Retry{MaxAttempts: 3, Backoff: -1}
			err := r.Do(ctx, &budget.Op{Name: "pay"}, func(ctx context.Context) error {
				req, _ := http.NewRequestWithContext(ctx, c.method, srv.URL, strings.NewReader("amount=5"))
				resp, err := client.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				return err
			})
			if err == nil {
				t.Fatal("no error from a server that never answers")
			}
			if s, _ := budget.SentOf(err); s != budget.MaybeExecuted {
				t.Errorf("SentOf(%v) = %v, want maybe_executed", err, s)
			}
			var be *budget.Error
			got := budget.OutcomeNone
			if errors.As(err, &be) {
				got = be.Outcome
			}
			if got != c.outcome {
				t.Errorf("error %v: outcome %v, want %v", err, got, c.outcome)
			}
			runs, keys := d.seen()
			if runs != c.runs {
				t.Fatalf("the handler ran %d times, want %d", runs, c.runs)
			}
			for _, k := range keys {
				if want, _ := budget.IdempotencyKeyFrom(ctx); c.key && k != `"`+want+`"` || !c.key && k != "" {
					t.Fatalf("keys sent %q, want the context's on every attempt", keys)
				}
			}
		})
	}
}

// A refused connection is not sent, and a Retry makes every attempt.
func TestTransportDialRefusedIsNotSent(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	client := &http.Client{Transport: httpbudget.NewTransport(httpbudget.NewBaseTransport(httpbudget.Limits{}))}
	for _, withDeadline := range []bool{true, false} {
		ctx := context.Background()
		if withDeadline {
			var cancel context.CancelFunc
			ctx, cancel = budget.Start(ctx, 30*time.Second)
			defer cancel()
		}
		calls := 0
		err := (&budget.Retry{MaxAttempts: 3, Backoff: -1}).Do(ctx, &budget.Op{Name: "pay"}, func(ctx context.Context) error {
			calls++
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr, strings.NewReader("x"))
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			return err
		})
		if s, _ := budget.SentOf(err); s != budget.NotSent || calls != 3 {
			t.Fatalf("deadline %v: SentOf(%v) = %v after %d calls; want not_sent after 3", withDeadline, err, s, calls)
		}
	}
}

// A POST through net/http whose caller gave up after it reached the handler
// may have run.
func TestTransportExpiryAfterWriteMayHaveRun(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so that net/http sees the client leave
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx, cancelBudget := budget.Start(ctx, time.Hour)
	defer cancelBudget()
	tctx, cancelT := context.WithTimeout(ctx, time.Hour)
	go func() { <-arrived; cancelT() }() // "the deadline" comes once the handler runs
	req, _ := http.NewRequestWithContext(tctx, http.MethodPost, srv.URL, strings.NewReader("x"))
	_, err := (&http.Client{Transport: httpbudget.NewTransport(nil)}).Do(req)
	if s, _ := budget.SentOf(err); s != budget.MaybeExecuted {
		t.Fatalf("SentOf(%v) = %v, want maybe_executed", err, s)
	}
}

// Classifying an error keeps what net.Error callers read: url.Error's
// Timeout, which asserts its inner error's type rather than unwrapping it.
func TestTransportClassifiedTimeoutIsATimeout(t *testing.T) {
	t.Parallel()
	base := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, context.DeadlineExceeded })
	ctx, cancel := budget.Start(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://svc.test/", nil)
	_, err := (&http.Client{Transport: httpbudget.NewTransport(base)}).Do(req)
	var ue *url.Error
	if !errors.As(err, &ue) || !ue.Timeout() || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v: not a timeout to url.Error", err)
	}
	if s, _ := budget.SentOf(err); s != budget.MaybeExecuted {
		t.Fatalf("SentOf(%v) = %v", err, s)
	}
}

// An error from a base that is not net/http's (whose trace hooks may never
// run) is never called "not sent" unless it is a dial error.
func TestTransportUnknownBaseIsMaybeExecuted(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	base := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, boom })
	ctx, cancel := budget.Start(context.Background(), time.Minute)
	defer cancel()
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		req, _ := http.NewRequestWithContext(ctx, method, "http://svc.test/", nil)
		_, err := httpbudget.NewTransport(base).RoundTrip(req)
		if s, _ := budget.SentOf(err); s != budget.MaybeExecuted || !errors.Is(err, boom) {
			t.Errorf("%s: SentOf(%v) = %v, want maybe_executed wrapping boom", method, err, s)
		}
		var i interface{ Idempotent() bool }
		if !errors.As(err, &i) || i.Idempotent() != (method == http.MethodGet) {
			t.Errorf("%s: Idempotent not reported as %v", method, method == http.MethodGet)
		}
	}
}

// A local refusal is not sent; an answer with Budget-Expired is executed
// (and permanent).
func TestTransportRefusalAndExpiredAnswer(t *testing.T) {
	t.Parallel()
	expired := roundTripFunc(func(*http.Request) (*http.Response, error) {
		h := http.Header{}
		h.Set(wire.HeaderBudgetExpired, "db")
		return &http.Response{StatusCode: 504, Body: http.NoBody, Header: h}, nil
	})
	ctx, cancel := budget.Start(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://svc.test/", nil)
	_, err := httpbudget.NewTransport(expired).RoundTrip(req)
	if s, _ := budget.SentOf(err); s != budget.Executed || !budget.IsPermanent(err) || !errors.Is(err, httpbudget.ErrUpstreamExpired) {
		t.Errorf("Budget-Expired answer: SentOf(%v) = %v, want executed, permanent", err, s)
	}
	short, cancelShort := budget.Start(context.Background(), 10*time.Millisecond)
	defer cancelShort()
	req, _ = http.NewRequestWithContext(short, http.MethodPost, "http://svc.test/", nil)
	_, err = httpbudget.NewTransport(expired, edge.WithMinUseful(time.Second)).RoundTrip(req)
	if s, _ := budget.SentOf(err); s != budget.NotSent || !errors.Is(err, budget.ErrInsufficient) {
		t.Errorf("local refusal: SentOf(%v) = %v, want not_sent", err, s)
	}
}

// The key is sent with and without a deadline, and a key of the caller's
// own is left alone.
func TestTransportSendsTheIdempotencyKey(t *testing.T) {
	t.Parallel()
	var got []string
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.Header.Get(wire.HeaderIdempotencyKey))
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}, nil
	})
	tr := httpbudget.NewTransport(base)
	keyed := budget.WithIdempotencyKey(context.Background())
	key, _ := budget.IdempotencyKeyFrom(keyed)
	withDeadline, cancel := budget.Start(keyed, time.Minute)
	defer cancel()
	for _, ctx := range []context.Context{keyed, withDeadline} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://svc.test/", nil)
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		if req.Header.Get(wire.HeaderIdempotencyKey) != "" {
			t.Fatal("the caller's request was modified")
		}
	}
	req, _ := http.NewRequestWithContext(withDeadline, http.MethodPost, "http://svc.test/", nil)
	req.Header.Set(wire.HeaderIdempotencyKey, "mine")
	if _, err := tr.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	want := []string{`"` + key + `"`, `"` + key + `"`, "mine"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("keys sent %q, want %q", got, want)
	}
}

// TestTransportAllocationsPost pins what RoundTrip allocates for a request
// that is not idempotent, over a base that answers at once: the 7 of a GET
// (see TestTransportAllocations) and the trace that tells "no connection
// yet" from "connection obtained": the trace and its closure, the trace's
// context, and the request's copy carrying it, 11 measured. A GET, and a
// POST with an idempotency key, pay none of it.
func TestTransportAllocationsPost(t *testing.T) {
	base := roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}, nil
	})
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://svc.test/", nil)
	allocs := func(tr http.RoundTripper) float64 {
		return testing.AllocsPerRun(500, func() {
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
		})
	}
	own := allocs(base)
	if got := allocs(httpbudget.NewTransport(base)) - own; got > 11 {
		t.Errorf("a POST: RoundTrip allocates %v times, want at most 11", got)
	}
}
