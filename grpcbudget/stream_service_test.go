package grpcbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
)

// streamService answers the interop service's streams through
// grpcbudget.EachMessage. FullDuplexCall's request payload body says what
// handling one message does:
//
//	"hang"        wait for the message's context to end, answer "expired:<why>"
//	"deadline"    answer the message context's time left, in whole ms
//	"sleep:<d>"   work for d, then answer "ok"
//	"stall"       stop reading: block until the stream ends
//	anything else answer the body back
//
// StreamingInputCall counts the messages; StreamingOutputCall sends one
// answer and then goes quiet until the stream ends.
type streamService struct {
	grpc_testing.UnimplementedTestServiceServer

	mu   sync.Mutex
	hung []time.Duration // how long each "hang" message's context lasted
}

func (s *streamService) FullDuplexCall(stream grpc_testing.TestService_FullDuplexCallServer) error {
	return grpcbudget.EachMessage(stream, func(ctx context.Context, req *grpc_testing.StreamingOutputCallRequest) error {
		body := string(req.GetPayload().GetBody())
		answer := body
		switch {
		case body == "hang":
			start := time.Now()
			<-ctx.Done()
			s.mu.Lock()
			s.hung = append(s.hung, time.Since(start))
			s.mu.Unlock()
			answer = "expired:" + why(ctx)
		case body == "deadline":
			left, ok := budget.Remaining(ctx)
			answer = "none"
			if ok {
				answer = strconv.FormatInt(left.Milliseconds(), 10)
			}
		case strings.HasPrefix(body, "sleep:"):
			d, _ := time.ParseDuration(strings.TrimPrefix(body, "sleep:"))
			time.Sleep(d)
			answer = "ok"
			if ctx.Err() != nil {
				answer = "expired:" + why(ctx)
			}
		case body == "stall":
			<-stream.Context().Done()
			return stream.Context().Err()
		}
		return stream.Send(&grpc_testing.StreamingOutputCallResponse{Payload: &grpc_testing.Payload{Body: []byte(answer)}})
	})
}

// why names what ended a message's context.
func why(ctx context.Context) string {
	cause := context.Cause(ctx)
	switch {
	case cause == grpcbudget.ErrMessageBudget:
		return "message"
	case errors.Is(cause, budget.ErrInsufficient):
		return "refused"
	case cause == nil:
		return "running"
	}
	return "stream"
}

func (s *streamService) StreamingInputCall(stream grpc_testing.TestService_StreamingInputCallServer) error {
	n := 0
	err := grpcbudget.EachMessage(stream, func(context.Context, *grpc_testing.StreamingInputCallRequest) error {
		n++
		return nil
	})
	if err != nil {
		return err
	}
	return stream.SendAndClose(&grpc_testing.StreamingInputCallResponse{AggregatedPayloadSize: int32(n)})
}

func (s *streamService) StreamingOutputCall(_ *grpc_testing.StreamingOutputCallRequest, stream grpc_testing.TestService_StreamingOutputCallServer) error {
	if err := stream.Send(&grpc_testing.StreamingOutputCallResponse{}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return stream.Context().Err()
}

// hangs returns how long each "hang" message's context lasted.
func (s *streamService) hangs() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.hung...)
}

// serveStreams starts streamService on a real loopback listener with the
// given server options and returns a client dialed with dialOpts. Both stop
// when the test ends.
func serveStreams(t testing.TB, srvOpts []grpc.ServerOption, dialOpts ...grpc.DialOption) (grpc_testing.TestServiceClient, *streamService) {
	t.Helper()
	svc := &streamService{}
	c, _ := serveStreamsWith(t, svc, srvOpts, dialOpts...)
	return c, svc
}

// serveStreamsWith starts svc on a real loopback listener.
func serveStreamsWith(t testing.TB, svc grpc_testing.TestServiceServer, srvOpts []grpc.ServerOption, dialOpts ...grpc.DialOption) (grpc_testing.TestServiceClient, *grpc.Server) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(srvOpts...)
	grpc_testing.RegisterTestServiceServer(srv, svc)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	conn, err := grpc.NewClient(lis.Addr().String(),
		append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dialOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		<-done
	})
	return grpc_testing.NewTestServiceClient(conn), srv
}

// streamServer returns server options installing the stream interceptor
// with opts.
func streamServer(opts ...edge.ServerOption) []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainStreamInterceptor(grpcbudget.StreamServerInterceptor(opts...))}
}

// duplexReq is a FullDuplexCall request with body.
func duplexReq(body string) *grpc_testing.StreamingOutputCallRequest {
	return &grpc_testing.StreamingOutputCallRequest{Payload: &grpc_testing.Payload{Body: []byte(body)}}
}

// events collects observed events.
type events struct {
	mu  sync.Mutex
	evs []budget.Event
}

func (e *events) Observe(_ context.Context, ev budget.Event) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

// stage returns the events of stage.
func (e *events) stage(name string) []budget.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []budget.Event
	for _, ev := range e.evs {
		if ev.Stage == name {
			out = append(out, ev)
		}
	}
	return out
}
