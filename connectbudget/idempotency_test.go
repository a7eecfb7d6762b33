package connectbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/idempotency"
	"github.com/timebudget/budget/wire"
)

// idemServer serves f as the unary procedure behind the budget interceptor
// (keeping 100 ms to answer, so that a repeat's refusal reaches its caller
// before the caller's deadline on a busy machine) and the idempotency
// interceptor on store, and counts the calls f runs.
type idemServer struct {
	url  string
	hc   *http.Client
	runs atomic.Int32
}

func serveIdempotent(t *testing.T, store idempotency.Store, f func(ctx context.Context, body string) (*connect.Response[str], error)) *idemServer {
	t.Helper()
	s := new(idemServer)
	mux := http.NewServeMux()
	mux.Handle(unaryProc, connect.NewUnaryHandler(unaryProc, func(ctx context.Context, r *connect.Request[str]) (*connect.Response[str], error) {
		s.runs.Add(1)
		return f(ctx, r.Msg.GetValue())
	}, connect.WithInterceptors(
		connectbudget.NewServerInterceptor(edge.WithPolicy(&wire.Policy{AnswerMargin: 100 * ms})),
		connectbudget.NewIdempotentInterceptor(store))))
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	s.url, s.hc = srv.URL, &http.Client{Transport: &http.Transport{Protocols: p}}
	t.Cleanup(func() {
		s.hc.CloseIdleConnections()
		srv.CloseClientConnections()
		srv.Close()
	})
	return s
}

// client returns a client with the budget interceptor, which sends keys.
func (s *idemServer) client(opts ...connect.ClientOption) *connect.Client[str, str] {
	return unaryClient(s.hc, s.url, append(opts, connect.WithInterceptors(connectbudget.NewClientInterceptor()))...)
}

func echo(_ context.Context, body string) (*connect.Response[str], error) {
	resp := connect.NewResponse(&str{Value: "ok:" + body})
	resp.Header().Set("Order-Id", "42")
	return resp, nil
}

// keyedCtx returns a context with a budget of d and an idempotency key.
func keyedCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := budget.Start(context.Background(), d)
	t.Cleanup(cancel)
	return budget.WithIdempotencyKey(ctx)
}

// A repeat of a finished key gets the first answer, with its headers and
// marked replayed, without running the handler, for every protocol; an
// error is replayed with its code, message and details.
func TestIdempotentReplaysAFinishedKey(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		s := serveIdempotent(t, new(idempotency.MemoryStore), echo)
		c := s.client(p.opt)
		ctx := keyedCtx(t, 5*time.Second)
		for i := range 2 {
			resp, err := c.CallUnary(ctx, connect.NewRequest(&str{Value: "a"}))
			if err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			if resp.Msg.GetValue() != "ok:a" || resp.Header().Get("Order-Id") != "42" {
				t.Errorf("%s, call %d: %q, header %v", p.name, i+1, resp.Msg.GetValue(), resp.Header())
			}
			if replayed := resp.Header().Get(connectbudget.HeaderIdempotentReplayed) == "true"; replayed != (i == 1) {
				t.Errorf("%s, call %d: replayed %v", p.name, i+1, replayed)
			}
		}
		if n := s.runs.Load(); n != 1 {
			t.Errorf("%s: the handler ran %d times, want 1", p.name, n)
		}
	}
	s := serveIdempotent(t, new(idempotency.MemoryStore), func(context.Context, string) (*connect.Response[str], error) {
		ce := connect.NewError(connect.CodeNotFound, errors.New("no such order"))
		d, _ := connect.NewErrorDetail(wrapperspb.String("order 42"))
		ce.AddDetail(d)
		return nil, ce
	})
	c := s.client()
	ctx := keyedCtx(t, 5*time.Second)
	_, err1 := c.CallUnary(ctx, connect.NewRequest(&str{Value: "a"}))
	_, err2 := c.CallUnary(ctx, connect.NewRequest(&str{Value: "a"}))
	var ce *connect.Error
	if !errors.As(err2, &ce) || ce.Code() != connect.CodeNotFound || ce.Message() != "no such order" || len(ce.Details()) != 1 ||
		ce.Meta().Get(connectbudget.HeaderIdempotentReplayed) != "true" {
		t.Errorf("a replayed error: %v (first %v)", err2, err1)
	}
	if n := s.runs.Load(); n != 1 {
		t.Errorf("the failing handler ran %d times, want 1", n)
	}
}

// A key reused with another request message is refused.
func TestIdempotentRefusesAChangedRequest(t *testing.T) {
	t.Parallel()
	s := serveIdempotent(t, new(idempotency.MemoryStore), echo)
	c := s.client()
	ctx := keyedCtx(t, 5*time.Second)
	if _, err := c.CallUnary(ctx, connect.NewRequest(&str{Value: "a"})); err != nil {
		t.Fatal(err)
	}
	_, err := c.CallUnary(ctx, connect.NewRequest(&str{Value: "b"}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "another call") {
		t.Fatalf("a changed request: %v, want invalid_argument", err)
	}
	if n := s.runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want 1", n)
	}
}

// A duplicate that arrives while the first call runs waits for its answer;
// one whose budget cannot cover the wait gets Aborted.
func TestIdempotentConcurrentDuplicate(t *testing.T) {
	// Not parallel: the refusal must reach the caller within its budget, which
	// 200 concurrent calls of another test on two cores could starve.
	release := make(chan struct{})
	s := serveIdempotent(t, new(idempotency.MemoryStore), func(ctx context.Context, body string) (*connect.Response[str], error) {
		<-release
		return echo(ctx, body)
	})
	c := s.client()
	ctx := keyedCtx(t, 10*time.Second)
	first := make(chan error, 1)
	go func() { _, err := c.CallUnary(ctx, connect.NewRequest(&str{Value: "a"})); first <- err }()
	for s.runs.Load() == 0 {
		time.Sleep(ms)
	}
	short, cancel := budget.Start(ctx, 300*ms) // the same key, a shorter budget
	defer cancel()
	if _, err := c.CallUnary(short, connect.NewRequest(&str{Value: "a"})); connect.CodeOf(err) != connect.CodeAborted {
		t.Errorf("a duplicate out of budget: %v, want aborted", err)
	}
	second := make(chan *connect.Response[str], 1)
	go func() {
		resp, _ := c.CallUnary(ctx, connect.NewRequest(&str{Value: "a"}))
		second <- resp
	}()
	time.Sleep(20 * ms) // let the duplicate start waiting; it waits as long as it must
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if resp := <-second; resp == nil || resp.Header().Get(connectbudget.HeaderIdempotentReplayed) != "true" {
		t.Errorf("a duplicate that waited: %v, want the first answer replayed", resp)
	}
	if n := s.runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want 1", n)
	}
}

// A key the store let expire runs the handler again.
func TestIdempotentExpiredKeyRunsAgain(t *testing.T) {
	t.Parallel()
	s := serveIdempotent(t, &idempotency.MemoryStore{TTL: 20 * ms}, echo)
	c := s.client()
	ctx := keyedCtx(t, 5*time.Second)
	if _, err := c.CallUnary(ctx, connect.NewRequest(&str{Value: "a"})); err != nil {
		t.Fatal(err)
	}
	time.Sleep(40 * ms) // past the TTL: the key is gone, whatever the load
	resp, err := c.CallUnary(ctx, connect.NewRequest(&str{Value: "a"}))
	if err != nil || resp.Header().Get(connectbudget.HeaderIdempotentReplayed) != "" || s.runs.Load() != 2 {
		t.Fatalf("after the TTL: %v, the handler ran %d times; want it run again", err, s.runs.Load())
	}
}

// failingStore fails every call.
type failingStore struct{}

var errStoreDown = errors.New("connection refused")

func (failingStore) Reserve(context.Context, string, [32]byte) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, errStoreDown
}
func (failingStore) Complete(context.Context, string, *idempotency.Record) error { return errStoreDown }
func (failingStore) Get(context.Context, string) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, errStoreDown
}

// A store that is down fails closed: Unavailable, the handler not run. A
// call without a key does not need the store.
func TestIdempotentStoreDownFailsClosed(t *testing.T) {
	t.Parallel()
	s := serveIdempotent(t, failingStore{}, echo)
	c := s.client()
	if _, err := c.CallUnary(keyedCtx(t, 5*time.Second), connect.NewRequest(&str{Value: "a"})); connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("store down: %v, want unavailable", err)
	}
	if n := s.runs.Load(); n != 0 {
		t.Fatalf("the handler ran %d times, want 0", n)
	}
	if _, err := c.CallUnary(context.Background(), connect.NewRequest(&str{Value: "a"})); err != nil {
		t.Fatalf("a call without a key: %v", err)
	}
}

// 200 concurrent retries of one key run the handler exactly once, and
// every one gets the answer.
func TestIdempotent200ConcurrentRetries(t *testing.T) {
	t.Parallel()
	s := serveIdempotent(t, new(idempotency.MemoryStore), func(ctx context.Context, body string) (*connect.Response[str], error) {
		time.Sleep(20 * ms)
		return echo(ctx, body)
	})
	c := s.client()
	ctx := keyedCtx(t, 20*time.Second)
	var failed atomic.Int32
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if resp, err := c.CallUnary(ctx, connect.NewRequest(&str{Value: "a"})); err != nil || resp.Msg.GetValue() != "ok:a" {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := s.runs.Load(); n != 1 || failed.Load() != 0 {
		t.Fatalf("the handler ran %d times and %d calls failed; want 1 and 0", n, failed.Load())
	}
}

// Hostile keys are refused with InvalidArgument naming what was wrong,
// before the handler or the store.
func TestIdempotentRefusesHostileKeys(t *testing.T) {
	t.Parallel()
	ran := false
	u := connectbudget.NewIdempotentInterceptor(failingStore{}).WrapUnary(func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) {
		ran = true
		return nil, nil
	})
	for _, tc := range []struct {
		name string
		vals []string
		why  string
	}{
		{"empty", []string{""}, "empty"},
		{"10 KB", []string{strings.Repeat("k", 10<<10)}, "longer than 255 bytes"},
		{"control character", []string{"a\x01b"}, "control character"},
		{"several values", []string{"a", "b"}, "more than once"},
		{"a list", []string{"a,b"}, "more than one value"},
	} {
		req := connect.NewRequest(&str{})
		req.Header()[wire.HeaderIdempotencyKey] = tc.vals
		_, err := u(context.Background(), req)
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v, want invalid_argument saying %q", tc.name, err, tc.why)
		}
	}
	if ran {
		t.Fatal("the handler ran for a hostile key")
	}
}

// The idempotency interceptor needs a store.
func TestIdempotentNilStorePanicsAtSetup(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a nil store")
		}
	}()
	connectbudget.NewIdempotentInterceptor(nil)
}

// A call without a key costs the idempotency interceptor no allocation:
// it reads one header and calls the handler.
func TestIdempotentWithoutKeyAllocatesNothing(t *testing.T) {
	u := connectbudget.NewIdempotentInterceptor(failingStore{}).WrapUnary(bareUnary)
	req := connect.NewRequest(&str{Value: "a"})
	if n := testing.AllocsPerRun(500, func() { _, _ = u(context.Background(), req) }); n != 0 {
		t.Fatalf("a call without a key: %v allocations, want 0", n)
	}
}

// BenchmarkIdempotentUnary is the interceptor on a memory store against the
// handler alone: a call without a key, and the replay of a finished key.
func BenchmarkIdempotentUnary(b *testing.B) {
	handler := func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) {
		return connect.NewResponse(&str{Value: "ok"}), nil
	}
	u := connectbudget.NewIdempotentInterceptor(new(idempotency.MemoryStore)).WrapUnary(handler)
	plain := connect.NewRequest(&str{Value: "charge 10"})
	keyed := connect.NewRequest(&str{Value: "charge 10"})
	keyed.Header().Set(wire.HeaderIdempotencyKey, "k")
	for _, bc := range []struct {
		name string
		f    connect.UnaryFunc
		req  connect.AnyRequest
	}{{"handler alone", handler, plain}, {"without a key", u, plain}, {"replay", u, keyed}} {
		b.Run(bc.name, func(b *testing.B) {
			_, _ = bc.f(context.Background(), bc.req)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.f(context.Background(), bc.req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
