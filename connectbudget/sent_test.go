package connectbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/wire"
)

// wantSent fails the test unless err is classified as want.
func wantSent(t *testing.T, what string, err error, want budget.Sent) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want one classified %v", what, want)
	}
	if got, ok := budget.SentOf(err); !ok || got != want {
		t.Errorf("%s: %v classified %v (%v), want %v", what, err, got, ok, want)
	}
}

// closedURL returns the URL of a loopback port where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + lis.Addr().String()
	_ = lis.Close()
	return url
}

// receiveOne opens the server stream and receives until it ends.
func receiveOne(ctx context.Context, hc *http.Client, url string, opts ...connect.ClientOption) error {
	c := connect.NewClient[str, str](hc, url+serverProc, opts...)
	st, err := c.CallServerStream(ctx, connect.NewRequest(&str{Value: "hi"}))
	if err != nil {
		return err
	}
	defer st.Close()
	for st.Receive() {
	}
	return st.Err()
}

// A connection refused is NotSent, unary and streaming, for every
// protocol; before the change it was unclassified.
func TestClientConnectionRefusedIsNotSent(t *testing.T) {
	t.Parallel()
	url := closedURL(t)
	hc := &http.Client{Transport: &http.Transport{}}
	ic := connect.WithInterceptors(connectbudget.NewClientInterceptor())
	for _, p := range protocols {
		_, err := unary(withTimeout(t, 5*time.Second), unaryClient(hc, url, p.opt, ic), "hi")
		wantSent(t, p.name+" unary", err, budget.NotSent)
		wantSent(t, p.name+" stream", receiveOne(withTimeout(t, 5*time.Second), hc, url, p.opt, ic), budget.NotSent)
	}
}

// The interceptor's own refusal never leaves the process: NotSent.
func TestClientLocalRefusalIsNotSent(t *testing.T) {
	t.Parallel()
	svc := new(service)
	url, hc := serve(t, transports[1], svc)
	ic := connect.WithInterceptors(connectbudget.NewClientInterceptor(edge.WithMinUseful(time.Second)))
	_, err := unary(withTimeout(t, 100*ms), unaryClient(hc, url, ic), "hi")
	wantSent(t, "unary", err, budget.NotSent)
	wantSent(t, "stream", receiveOne(withTimeout(t, 100*ms), hc, url, ic), budget.NotSent)
	if n := svc.calls.Load(); n != 0 {
		t.Fatalf("refused calls reached the handler %d times", n)
	}
}

// An error the handler returned is Executed, even with a code
// (Unavailable) that connect-go also makes up for a failed connection.
func TestClientHandlerErrorIsExecuted(t *testing.T) {
	t.Parallel()
	c := serveUnary(t, func(context.Context) (string, error) {
		return "", connect.NewError(connect.CodeUnavailable, errors.New("down for maintenance"))
	})
	_, err := unary(withTimeout(t, 5*time.Second), c, "hi")
	wantSent(t, "unary", err, budget.Executed)
}

// A call abandoned after the request was written, before an answer, may
// have run: MaybeExecuted.
func TestClientAbandonedCallIsMaybeExecuted(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	c := serveUnary(t, func(ctx context.Context) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := unary(ctx, c, "hi")
	wantSent(t, "unary", err, budget.MaybeExecuted)
}

// A refusal on arrival by the server's interceptor carries
// "Budget-No-Retry: shed", which the client reads as ServerRefused.
func TestClientServerRefusalIsServerRefused(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tr transport, p protocol) {
		svc := new(service)
		url, hc := serve(t, tr, svc, connect.WithInterceptors(
			connectbudget.NewServerInterceptor(edge.WithPolicy(&wire.Policy{Min: time.Hour}))))
		ic := connect.WithInterceptors(connectbudget.NewClientInterceptor())
		_, err := unary(withTimeout(t, 5*time.Second), unaryClient(hc, url, p.opt, ic), "hi")
		wantSent(t, "unary", err, budget.ServerRefused)
		wantSent(t, "stream", receiveOne(withTimeout(t, 5*time.Second), hc, url, p.opt, ic), budget.ServerRefused)
		if n := svc.calls.Load(); n != 0 {
			t.Fatalf("refused calls reached the handler %d times", n)
		}
	})
}

// The idempotency key of the caller's context goes with every attempt, the
// same on each, as the Idempotency-Key header, for every protocol, unary
// and streaming; a request reused for a call with another key carries the
// new one.
func TestClientSendsTheIdempotencyKey(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tr transport, p protocol) {
		svc := new(service)
		url, hc := serve(t, tr, svc)
		c := unaryClient(hc, url, p.opt, connect.WithInterceptors(connectbudget.NewClientInterceptor()))
		ctx := budget.WithIdempotencyKey(context.Background())
		key, _ := budget.IdempotencyKeyFrom(ctx)
		want, _ := wire.FormatIdempotencyKey(key)
		req := connect.NewRequest(&str{Value: "hi"})
		for i := range 2 {
			if _, err := c.CallUnary(ctx, req); err != nil {
				t.Fatal(err)
			}
			if _, h := svc.last(); h.Get(wire.HeaderIdempotencyKey) != want {
				t.Errorf("attempt %d sent %q, want %q", i+1, h.Get(wire.HeaderIdempotencyKey), want)
			}
		}
		other := budget.WithIdempotencyKey(context.Background())
		k2, _ := budget.IdempotencyKeyFrom(other)
		if _, err := c.CallUnary(other, req); err != nil {
			t.Fatal(err)
		}
		if _, h := svc.last(); h.Get(wire.HeaderIdempotencyKey) != `"`+k2+`"` {
			t.Errorf("a reused request sent %q, want the new key %q", h.Get(wire.HeaderIdempotencyKey), k2)
		}
		sctx, cancel := context.WithTimeout(ctx, 50*ms)
		defer cancel()
		if err := receiveOne(sctx, hc, url, p.opt, connect.WithInterceptors(connectbudget.NewClientInterceptor())); err == nil || errors.Is(err, io.EOF) {
			t.Fatalf("the server stream ended with %v", err)
		}
		if _, h := svc.last(); h.Get(wire.HeaderIdempotencyKey) != want {
			t.Errorf("a stream sent %q, want %q", h.Get(wire.HeaderIdempotencyKey), want)
		}
	})
}

// retried runs call under a Retry of three attempts that retries anything,
// and returns its error and the number of attempts made.
func retried(ctx context.Context, call func(ctx context.Context) error) (int, error) {
	n := 0
	err := (&budget.Retry{MaxAttempts: 3, Backoff: -1, Idempotent: true}).Do(ctx, &budget.Op{Name: "call"},
		func(ctx context.Context) error {
			n++
			return call(ctx)
		})
	return n, err
}

// A server that shed the call on arrival, or whose handler gave up after
// its own retries, sends Budget-No-Retry; the client marks the error so that
// Retry makes no second attempt, and a server relaying it gives up in turn.
// Before the change the client retried both three times, the handler
// running three times.
func TestClientObeysTheNoRetryMarker(t *testing.T) {
	t.Parallel()
	ctx := withTimeout(t, 5*time.Second)
	var runs atomic.Int32
	c := serveUnary(t, func(ctx context.Context) (string, error) {
		runs.Add(1)
		return "", (&budget.Retry{MaxAttempts: 2, Backoff: -1}).Do(ctx, &budget.Op{Name: "dependency"},
			func(context.Context) error {
				return connect.NewError(connect.CodeUnavailable, errors.New("dependency down"))
			})
	})
	n, err := retried(ctx, func(ctx context.Context) error { _, err := unary(ctx, c, "hi"); return err })
	if n != 1 || runs.Load() != 1 {
		t.Errorf("gave up: %d attempts, the handler ran %d times; want 1 and 1", n, runs.Load())
	}
	wantSent(t, "gave up", err, budget.Executed)
	if !budget.GaveUp(err) || connect.CodeOf(err) != connect.CodeUnavailable {
		t.Errorf("gave up: %v: GaveUp %v, code %v; want true and unavailable", err, budget.GaveUp(err), connect.CodeOf(err))
	}

	// A middle hop relays the bottom's "retried" as its own.
	middle := serveUnary(t, func(ctx context.Context) (string, error) { return unary(ctx, c, "hi") })
	n, err = retried(ctx, func(ctx context.Context) error { _, err := unary(ctx, middle, "hi"); return err })
	if n != 1 || runs.Load() != 2 {
		t.Errorf("relayed: %d attempts, the bottom ran %d times in all; want 1 and 2", n, runs.Load())
	}
	if !budget.GaveUp(err) {
		t.Errorf("relayed: %v does not report GaveUp", err)
	}

	each(t, func(t *testing.T, tr transport, p protocol) {
		// A context of the subtest's own: parallel subtests may wait for
		// a slot longer than the parent's context lasts.
		ctx := withTimeout(t, 5*time.Second)
		svc := new(service)
		url, hc := serve(t, tr, svc, connect.WithInterceptors(
			connectbudget.NewServerInterceptor(edge.WithPolicy(&wire.Policy{Min: time.Hour}))))
		ic := connect.WithInterceptors(connectbudget.NewClientInterceptor())
		n, err := retried(ctx, func(ctx context.Context) error {
			_, err := unary(ctx, unaryClient(hc, url, p.opt, ic), "hi")
			return err
		})
		if n != 1 {
			t.Errorf("shed: %d attempts, want 1", n)
		}
		wantSent(t, "shed", err, budget.ServerRefused)
		if connect.CodeOf(err) != connect.CodeDeadlineExceeded {
			t.Errorf("shed: code %v, want deadline_exceeded", connect.CodeOf(err))
		}
	})
}

// A stream whose handler gave up after its own retries says so too, and
// its client does not retry it.
func TestClientObeysTheNoRetryMarkerOnStreams(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	mux := http.NewServeMux()
	mux.Handle(serverProc, connect.NewServerStreamHandler(serverProc, func(ctx context.Context, _ *connect.Request[str], _ *connect.ServerStream[str]) error {
		runs.Add(1)
		return (&budget.Retry{MaxAttempts: 2, Backoff: -1}).Do(ctx, &budget.Op{Name: "dependency"},
			func(context.Context) error { return errors.New("dependency down") })
	}, connect.WithInterceptors(connectbudget.NewServerInterceptor())))
	srv := httptest.NewServer(mux)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		srv.CloseClientConnections()
		srv.Close()
	})
	n, err := retried(withTimeout(t, 5*time.Second), func(ctx context.Context) error {
		return receiveOne(ctx, hc, srv.URL, connect.WithInterceptors(connectbudget.NewClientInterceptor()))
	})
	if n != 1 || runs.Load() != 1 {
		t.Errorf("a stream that gave up: %d attempts, the handler ran %d times; want 1 and 1", n, runs.Load())
	}
	wantSent(t, "a stream that gave up", err, budget.Executed)
	if !budget.GaveUp(err) {
		t.Errorf("a stream that gave up: %v does not report GaveUp", err)
	}
}
