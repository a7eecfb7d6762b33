package connectbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
)

// fakeClientConn is a client stream with no network under it. Send returns
// at once and, when answering is set, queues an answer; Receive waits for
// an answer or for the stream's context, and returns io.EOF once the
// request is closed and every answer was read.
type fakeClientConn struct {
	ctx       context.Context
	spec      connect.Spec
	answering bool
	answers   chan struct{}
	header    http.Header
}

func (c *fakeClientConn) Spec() connect.Spec         { return c.spec }
func (c *fakeClientConn) Peer() connect.Peer         { return connect.Peer{} }
func (c *fakeClientConn) RequestHeader() http.Header { return c.header }
func (c *fakeClientConn) Send(any) error {
	if c.answering {
		c.answers <- struct{}{}
	}
	return nil
}
func (c *fakeClientConn) CloseRequest() error { close(c.answers); return nil }
func (c *fakeClientConn) Receive(any) error {
	select {
	case _, ok := <-c.answers:
		if !ok {
			return io.EOF
		}
		return nil
	case <-c.ctx.Done():
		return connect.NewError(connect.CodeCanceled, c.ctx.Err())
	}
}
func (c *fakeClientConn) ResponseHeader() http.Header  { return http.Header{} }
func (c *fakeClientConn) ResponseTrailer() http.Header { return http.Header{} }
func (c *fakeClientConn) CloseResponse() error         { return nil }

// openFakeStream opens a bidirectional stream through the client
// interceptor with opts over a fake.
func openFakeStream(ctx context.Context, answering bool, opts ...edge.ClientOption) connect.StreamingClientConn {
	ic := connectbudget.NewClientInterceptor(opts...)
	open := ic.WrapStreamingClient(func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		return &fakeClientConn{ctx: ctx, spec: spec, answering: answering, answers: make(chan struct{}, 64), header: http.Header{}}
	})
	return open(ctx, connect.Spec{Procedure: "/acme.v1.Chat/Talk", StreamType: connect.StreamTypeBidi, IsClient: true})
}

// TestClientReceiveBoundWhileSending: a client that sends every 100 ms to a
// server that never answers sees its 300 ms receive budget run out, 300 ms
// after its first message: sending has a timer of its own. Before, Send and
// Receive shared one timer, and each Send stopped the Receive's, so the
// Receive waited until the stream's deadline (an hour here).
func TestClientReceiveBoundWhileSending(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Hour)
		defer cancel()
		conn := openFakeStream(ctx, false, connectbudget.WithMessageBudget(300*time.Millisecond))
		start := time.Now()
		type result struct {
			err    error
			waited time.Duration
		}
		got := make(chan result, 1)
		go func() {
			err := conn.Receive(new(str))
			got <- result{err, time.Since(start)}
		}()
		for range 20 {
			if err := conn.Send(new(str)); err != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		r := <-got
		if r.waited != 300*time.Millisecond {
			t.Errorf("Receive ended after %v, want exactly 300ms", r.waited)
		}
		if connect.CodeOf(r.err) != connect.CodeDeadlineExceeded || !errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("Receive: %v, want DeadlineExceeded", r.err)
		}
		_ = conn.CloseResponse()
	})
}

// TestClientLimitsCountTheServer: a request/response client that pauses
// 300 ms between its messages, against a server that answers each at once,
// runs its whole stream under a 100 ms per-message budget and a 50 ms idle
// timeout: a Receive waiting while the client itself has asked nothing does
// not count the client's pause against the server.
func TestClientLimitsCountTheServer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Hour)
		defer cancel()
		conn := openFakeStream(ctx, true, connectbudget.WithMessageBudget(100*time.Millisecond),
			connectbudget.WithIdleTimeout(50*time.Millisecond))
		received := make(chan error, 1)
		go func() {
			n := 0
			for {
				if err := conn.Receive(new(str)); err != nil {
					if errors.Is(err, io.EOF) && n == 5 {
						err = nil
					}
					received <- err
					return
				}
				n++
			}
		}()
		for range 5 {
			time.Sleep(300 * time.Millisecond) // the client's own pause
			if err := conn.Send(new(str)); err != nil {
				t.Fatalf("Send: %v", err)
			}
		}
		_ = conn.CloseRequest()
		if err := <-received; err != nil {
			t.Errorf("stream ended with %v, want all five answers: the server answered each at once", err)
		}
		_ = conn.CloseResponse()
	})
}

// fakeHandlerConn is a server stream with no network under it: Receive
// hands out queued messages, waits for more, and returns io.EOF once end is
// closed (the stream ends after the handler returned).
type fakeHandlerConn struct {
	msgs chan struct{}
	end  chan struct{}
}

func (c *fakeHandlerConn) Spec() connect.Spec {
	return connect.Spec{Procedure: "/acme.v1.Chat/Talk", StreamType: connect.StreamTypeBidi}
}
func (c *fakeHandlerConn) Peer() connect.Peer           { return connect.Peer{} }
func (c *fakeHandlerConn) RequestHeader() http.Header   { return http.Header{} }
func (c *fakeHandlerConn) Send(any) error               { return nil }
func (c *fakeHandlerConn) ResponseHeader() http.Header  { return http.Header{} }
func (c *fakeHandlerConn) ResponseTrailer() http.Header { return http.Header{} }
func (c *fakeHandlerConn) Receive(any) error {
	select {
	case <-c.msgs:
		return nil
	case <-c.end:
		return io.EOF
	}
}

// TestServerIdleHandlerReturnsDuringReceive: a handler under an idle
// timeout that reads in a goroutine of its own and returns after the first
// message, while that goroutine is still in Receive or about to call it
// again, is safe (run with -race): 1,000 streams, and every goroutine ends
// with its stream.
func TestServerIdleHandlerReturnsDuringReceive(t *testing.T) {
	t.Parallel()
	handle := connectbudget.NewServerInterceptor(connectbudget.WithIdleTimeout(time.Minute)).WrapStreamingHandler(
		func(ctx context.Context, conn connect.StreamingHandlerConn) error {
			got := make(chan struct{}, 1)
			go func() {
				for {
					if conn.Receive(new(str)) != nil {
						return
					}
					select {
					case got <- struct{}{}:
					default:
					}
				}
			}()
			<-got
			return nil
		})
	var wg sync.WaitGroup
	for range 1000 {
		conn := &fakeHandlerConn{msgs: make(chan struct{}, 8), end: make(chan struct{})}
		for range 8 {
			conn.msgs <- struct{}{}
		}
		wg.Go(func() {
			if err := handle(context.Background(), conn); err != nil {
				t.Errorf("stream ended with %v", err)
			}
			close(conn.end)
		})
	}
	wg.Wait()
}
