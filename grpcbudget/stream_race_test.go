package grpcbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
)

// detachedReader is a bidirectional handler that reads in a goroutine of its
// own and returns after the first message, while that goroutine is still in
// Recv or about to call it again: grpc-go allows it, and the reader's Recv
// then fails once the stream is over.
type detachedReader struct {
	grpc_testing.UnimplementedTestServiceServer
}

func (detachedReader) FullDuplexCall(stream grpc_testing.TestService_FullDuplexCallServer) error {
	got := make(chan struct{}, 1)
	go func() {
		for {
			if _, err := stream.Recv(); err != nil {
				return
			}
			select {
			case got <- struct{}{}:
			default:
			}
		}
	}()
	<-got
	return stream.Send(&grpc_testing.StreamingOutputCallResponse{})
}

// TestIdleTimeoutHandlerReturnsDuringRecv: a server with WithIdleTimeout
// whose handler returns while its own reader goroutine is still in Recv
// serves 1,000 such streams without a panic (before, a send on the request
// channel end had closed) and, under -race, without a data race.
func TestIdleTimeoutHandlerReturnsDuringRecv(t *testing.T) {
	t.Parallel()
	c, _ := serveStreamsWith(t, detachedReader{}, streamServer(grpcbudget.WithIdleTimeout(time.Minute)))
	const streams, parallel = 1000, 20
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for range streams {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := c.FullDuplexCall(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			req := duplexReq("x")
			for range 20 { // keep the reader in Recv while the handler returns
				if st.Send(req) != nil {
					break
				}
			}
			for {
				if _, err := st.Recv(); err != nil {
					if err != io.EOF {
						t.Errorf("stream ended with %v, want the handler's OK", err)
					}
					return
				}
			}
		})
	}
	wg.Wait()
}

// answeringStream is a client stream with no network under it whose server
// answers each message at once: SendMsg queues an answer, RecvMsg waits for
// one (or for the stream's end), and returns io.EOF once the client closed
// its side and every answer was read.
type answeringStream struct {
	grpc.ClientStream
	ctx     context.Context
	answers chan struct{}
}

func (s *answeringStream) SendMsg(any) error { s.answers <- struct{}{}; return nil }
func (s *answeringStream) CloseSend() error  { close(s.answers); return nil }
func (s *answeringStream) RecvMsg(any) error {
	select {
	case _, ok := <-s.answers:
		if !ok {
			return io.EOF
		}
		return nil
	case <-s.ctx.Done():
		return status.FromContextError(s.ctx.Err()).Err()
	}
}
func (s *answeringStream) Header() (metadata.MD, error) { return nil, nil }
func (s *answeringStream) Context() context.Context     { return s.ctx }
func (s *answeringStream) Trailer() metadata.MD         { return nil }

// TestClientLimitsCountTheServer: a request/response client that pauses
// 300 ms between its messages, against a server that answers each at once,
// runs its whole stream under a 100 ms per-message budget and a 50 ms idle
// timeout: the client's RecvMsg, waiting for the next answer while the
// client itself has asked nothing, does not count the client's pause. Before,
// the first pause ended the stream with "server idle".
func TestClientLimitsCountTheServer(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]edge.ClientOption{
		{grpcbudget.WithMessageBudget(100 * time.Millisecond), grpcbudget.WithIdleTimeout(50 * time.Millisecond)},
		{grpcbudget.WithMessageBudget(100 * time.Millisecond)},
	} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := budget.Start(context.Background(), time.Hour)
			defer cancel()
			intercept := grpcbudget.StreamClientInterceptor(opts...)
			cs, err := intercept(ctx, duplexDesc, nil, "/svc/Duplex",
				func(ctx context.Context, _ *grpc.StreamDesc, _ *grpc.ClientConn, _ string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
					return &answeringStream{ctx: ctx, answers: make(chan struct{}, 16)}, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			received := make(chan error, 1)
			go func() {
				n := 0
				for {
					if err := cs.RecvMsg(nil); err != nil {
						if err == io.EOF && n == 5 {
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
				if err := cs.SendMsg(nil); err != nil {
					t.Fatalf("SendMsg: %v", err)
				}
			}
			_ = cs.CloseSend()
			if err := <-received; err != nil {
				t.Errorf("stream ended with %v, want all five answers: the server answered each at once", err)
			}
		})
	}
}

// TestClientRecvBoundAfterClose: a RecvMsg that began before the client
// asked anything ends at the per-message budget counted from the moment
// the client closed its send side (from then on every answer is awaited),
// however long it waited before.
func TestClientRecvBoundAfterClose(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), time.Hour)
		defer cancel()
		blocking := openFake(t, ctx, true, grpcbudget.WithMessageBudget(100*time.Millisecond))
		got := make(chan error, 1)
		go func() { got <- blocking.RecvMsg(nil) }()
		time.Sleep(time.Second) // nothing asked: not counted
		sentAt := time.Now()
		_ = blocking.CloseSend()
		err := <-got
		if waited := time.Since(sentAt); waited != 100*time.Millisecond {
			t.Errorf("RecvMsg ended %v after the send side closed, want exactly 100ms", waited)
		}
		if status.Code(err) != codes.DeadlineExceeded || !errors.Is(err, grpcbudget.ErrMessageBudget) {
			t.Errorf("err %v, want DEADLINE_EXCEEDED matching ErrMessageBudget", err)
		}
	})
}
