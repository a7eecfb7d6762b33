package httpbudget_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// roundTripFunc lets a test see the request the transport sends.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTransportSendsTheRemainingBudget(t *testing.T) {
	t.Parallel()
	var sent *http.Request
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = r
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("")), Header: http.Header{}}, nil
	})
	tr := httpbudget.NewTransport(base, httpbudget.WithConnectTimeoutHeader(), httpbudget.WithEnvoyTimeoutHeader(),
		edge.WithTransit(5*time.Millisecond))
	ctx, cancel := budget.Start(context.Background(), 700*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/x", nil)
	req.Header.Set("X-Trace", "abc")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	ms, err := strconv.Atoi(sent.Header.Get("Request-Timeout-Ms"))
	if err != nil || ms > 695 || ms < 600 {
		t.Fatalf("Request-Timeout-Ms = %q: want the time left less transit, rounded down", sent.Header.Get("Request-Timeout-Ms"))
	}
	dl, ok, err := wire.ParseRequestDeadline(sent.Header.Get("Request-Deadline"))
	want, _ := ctx.Deadline()
	if !ok || err != nil || dl.After(want) || want.Sub(dl) > 6*time.Millisecond {
		t.Fatalf("Request-Deadline = %v, want about %v less transit", dl, want)
	}
	if sent.Header.Get("Connect-Timeout-Ms") == "" || sent.Header.Get("X-Envoy-Upstream-Rq-Timeout-Ms") == "" {
		t.Fatalf("optional headers missing: %v", sent.Header)
	}
	if sent.Header.Get("X-Trace") != "abc" {
		t.Fatal("the caller's headers were not forwarded")
	}
	if req.Header.Get("Request-Timeout-Ms") != "" || len(req.Header) != 1 {
		t.Fatalf("the caller's request was modified: %v", req.Header)
	}
}

func TestTransportRefusesLocallyWithoutANetworkCall(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	client := &http.Client{Transport: httpbudget.NewTransport(srv.Client().Transport, edge.WithMinUseful(50*time.Millisecond),
		edge.WithClientStage("pricing"))}
	ctx, cancel := budget.Start(context.Background(), 30*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("body"))
	_, err := client.Do(req)
	if !errors.Is(err, budget.ErrInsufficient) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrInsufficient", err)
	}
	var be *budget.Error
	if !errors.As(err, &be) || be.Stage != "pricing" {
		t.Fatalf("err = %#v does not name the stage", err)
	}
	if hits.Load() != 0 {
		t.Fatal("the server was called")
	}
	ev := budget.LedgerFrom(ctx).Events()
	if last := ev[len(ev)-1]; last.Kind != budget.EventRefuse || last.Stage != "pricing" {
		t.Fatalf("the refusal is not in the ledger: %+v", last)
	}
	// A budget already spent is an expiry, not a shortfall.
	spent, cancel2 := budget.Start(context.Background(), 0)
	defer cancel2()
	req, _ = http.NewRequestWithContext(spent, http.MethodGet, srv.URL, nil)
	if _, err := client.Do(req); !errors.Is(err, context.DeadlineExceeded) || hits.Load() != 0 {
		t.Fatalf("spent budget: err = %v, hits %d", err, hits.Load())
	}
}

func TestTransportNeverSendsZero(t *testing.T) {
	t.Parallel()
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		t.Errorf("sent with %q", r.Header.Get("Request-Timeout-Ms"))
		return nil, errors.New("unreachable")
	})
	tr := httpbudget.NewTransport(base)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(900*time.Microsecond))
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, budget.ErrInsufficient) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("under 1ms left: err = %v", err)
	}
}

func TestTransportReportsUpstreamBudgetExpired(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	upstream := httpbudget.NewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("the upstream handler ran")
	}), edge.WithPolicy(&wire.Policy{Min: time.Hour}), edge.WithStage("geometry"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		upstream.ServeHTTP(w, r)
	}))
	defer srv.Close()
	client := &http.Client{Transport: httpbudget.NewTransport(srv.Client().Transport)}
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := client.Do(req)
	if resp != nil {
		t.Fatal("a response was returned with the error")
	}
	if !errors.Is(err, httpbudget.ErrUpstreamExpired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrUpstreamExpired", err)
	}
	var be *budget.Error
	if !errors.As(err, &be) || be.Stage != "geometry" {
		t.Fatalf("err %v does not name the upstream stage", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("upstream called %d times; the transport must not retry", calls.Load())
	}
}

func TestTransportPassesThroughWithoutDeadline(t *testing.T) {
	t.Parallel()
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Header.Get("Request-Timeout-Ms") != "" {
			t.Error("a header was sent without a deadline")
		}
		return &http.Response{StatusCode: 204, Body: http.NoBody, Header: http.Header{}}, nil
	})
	req, _ := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
	resp, err := httpbudget.NewTransport(base).RoundTrip(req)
	if err != nil || resp.StatusCode != 204 {
		t.Fatal(resp, err)
	}
}

// A chain over real loopback connections: edge -> service. The service sees
// less time than the edge had, and never more.
func TestChainSpendsTheBudgetDown(t *testing.T) {
	t.Parallel()
	leftAt := make(chan time.Duration, 1)
	svc := httptest.NewServer(httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		left, _ := budget.Remaining(r.Context())
		leftAt <- left
	})))
	defer svc.Close()
	client := &http.Client{Transport: httpbudget.NewTransport(httpbudget.NewBaseTransport(httpbudget.Limits{}))}
	defer client.CloseIdleConnections()
	edge := httptest.NewServer(httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond) // the edge's own work
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, svc.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), httpbudget.StatusOf(r.Context(), err))
			return
		}
		_ = resp.Body.Close()
	}), edge.WithPolicy(&wire.Policy{Trust: wire.SourcesNone, Default: 500 * time.Millisecond})))
	defer edge.Close()
	resp, err := http.Get(edge.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	left := <-leftAt
	if left > 480*time.Millisecond || left <= 0 {
		t.Fatalf("the service saw %v left of a 500ms budget after 20ms at the edge", left)
	}
}

// A retry loop over the transport: each attempt says its number, the server
// records it on arrival, and an upstream Budget-Expired ends the loop at once.
func TestTransportUnderRetry(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var arrivals []int
	obs := budget.ObserverFunc(func(_ context.Context, ev budget.Event) {
		if ev.Kind == budget.EventArrival {
			mu.Lock()
			arrivals = append(arrivals, ev.Attempt)
			mu.Unlock()
		}
	})
	var calls atomic.Int32
	srv := httptest.NewServer(httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}), edge.WithObserver(obs)))
	defer srv.Close()
	client := &http.Client{Transport: httpbudget.NewTransport(srv.Client().Transport)}
	get := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			return errors.New(resp.Status)
		}
		return nil
	}
	ctx, cancel := budget.Start(context.Background(), 5*time.Second)
	defer cancel()
	retry := &budget.Retry{MaxAttempts: 5, Backoff: time.Millisecond}
	if err := retry.Do(ctx, &budget.Op{Name: "svc"}, get); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := fmt.Sprint(arrivals)
	mu.Unlock()
	if got != "[1 2 3]" {
		t.Fatalf("the server saw attempts %s, want [1 2 3]", got)
	}

	// An upstream that refuses for lack of budget is not retried.
	refusing := httptest.NewServer(httpbudget.NewHandler(http.NotFoundHandler(), edge.WithPolicy(&wire.Policy{Min: time.Hour})))
	defer refusing.Close()
	var hits atomic.Int32
	getRefusing := func(ctx context.Context) error {
		hits.Add(1)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, refusing.URL, nil)
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	err := retry.Do(ctx, &budget.Op{Name: "refusing"}, getRefusing)
	if !errors.Is(err, httpbudget.ErrUpstreamExpired) || hits.Load() != 1 {
		t.Fatalf("err = %v after %d attempts; want ErrUpstreamExpired after 1", err, hits.Load())
	}
}
