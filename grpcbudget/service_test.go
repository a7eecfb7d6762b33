package grpcbudget_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
)

// testService is grpc-go's interop test service. UnaryCall's payload body
// says what the handler does:
//
//	""            answer at once
//	"sleep:<d>"   work for d, or until the context is done
//	"hang"        wait for the context to be done, return its error
//	"give-up"     wait for the context to be done, return an empty reply
//	"cancel"      wait for the context to be done, return CANCELLED
//	"cancel-now"  return CANCELLED at once
//	"gave-up"     retry a failing dependency twice and return the error
//
// Every handler records what it saw.
type testService struct {
	grpc_testing.UnimplementedTestServiceServer
	calls atomic.Int32

	mu   sync.Mutex
	seen seen
}

// seen is what the last handler saw.
type seen struct {
	deadline  bool
	remaining time.Duration
	ledger    bool
	md        metadata.MD
	stopped   time.Time // when the handler returned
}

func (s *testService) record(ctx context.Context) {
	s.calls.Add(1)
	var v seen
	v.remaining, v.deadline = budget.Remaining(ctx)
	v.ledger = budget.LedgerFrom(ctx) != nil
	v.md, _ = metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	s.seen = v
	s.mu.Unlock()
}

func (s *testService) stop() {
	s.mu.Lock()
	s.seen.stopped = time.Now()
	s.mu.Unlock()
}

func (s *testService) last() seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

func (s *testService) EmptyCall(ctx context.Context, _ *grpc_testing.Empty) (*grpc_testing.Empty, error) {
	return &grpc_testing.Empty{}, nil
}

func (s *testService) UnaryCall(ctx context.Context, req *grpc_testing.SimpleRequest) (*grpc_testing.SimpleResponse, error) {
	s.record(ctx)
	defer s.stop()
	var body string
	if req.GetPayload() != nil {
		body = string(req.GetPayload().GetBody())
	}
	switch {
	case body == "hang":
		<-ctx.Done()
		return nil, ctx.Err()
	case body == "give-up":
		<-ctx.Done()
		return &grpc_testing.SimpleResponse{}, nil
	case body == "cancel":
		<-ctx.Done()
		return nil, status.Error(codes.Canceled, "the work was canceled")
	case body == "cancel-now":
		return nil, status.Error(codes.Canceled, "the work was canceled")
	case body == "gave-up":
		// Two attempts at a dependency that fails: the handler gives up.
		return nil, (&budget.Retry{MaxAttempts: 2, Backoff: -1}).Do(ctx, &budget.Op{Name: "dependency"},
			func(context.Context) error { return errors.New("dependency down") })
	case strings.HasPrefix(body, "sleep:"):
		d, _ := time.ParseDuration(strings.TrimPrefix(body, "sleep:"))
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &grpc_testing.SimpleResponse{}, nil
}

func (s *testService) StreamingOutputCall(req *grpc_testing.StreamingOutputCallRequest, ss grpc_testing.TestService_StreamingOutputCallServer) error {
	s.record(ss.Context())
	defer s.stop()
	if string(req.GetPayload().GetBody()) == "gave-up" {
		// Two attempts at a dependency that fails: the handler gives up.
		return (&budget.Retry{MaxAttempts: 2, Backoff: -1}).Do(ss.Context(), &budget.Op{Name: "dependency"},
			func(context.Context) error { return errors.New("dependency down") })
	}
	for range req.GetResponseParameters() {
		if err := ss.Send(&grpc_testing.StreamingOutputCallResponse{}); err != nil {
			return err
		}
	}
	return nil
}

// do calls UnaryCall with the given payload body.
func do(ctx context.Context, c grpc_testing.TestServiceClient, body string) error {
	_, err := c.UnaryCall(ctx, &grpc_testing.SimpleRequest{Payload: &grpc_testing.Payload{Body: []byte(body)}})
	return err
}

// stream opens StreamingOutputCall for n responses and reads them all.
func stream(ctx context.Context, c grpc_testing.TestServiceClient, n int) error {
	req := &grpc_testing.StreamingOutputCallRequest{ResponseParameters: make([]*grpc_testing.ResponseParameters, n)}
	for i := range req.ResponseParameters {
		req.ResponseParameters[i] = &grpc_testing.ResponseParameters{}
	}
	st, err := c.StreamingOutputCall(ctx, req)
	if err != nil {
		return err
	}
	for {
		if _, err := st.Recv(); err != nil {
			if err.Error() == "EOF" {
				return nil
			}
			return err
		}
	}
}

// serve starts the test service on loopback with the given server options
// and returns a plain client (no interceptors unless dialOpts add some) and
// the service. Both are stopped when the test ends.
func serve(t testing.TB, srvOpts []grpc.ServerOption, dialOpts ...grpc.DialOption) (grpc_testing.TestServiceClient, *testService) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	svc := &testService{}
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
	return grpc_testing.NewTestServiceClient(conn), svc
}

// withServer returns server options installing our interceptors.
func withServer(u grpc.UnaryServerInterceptor, s grpc.StreamServerInterceptor) []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(u), grpc.ChainStreamInterceptor(s)}
}

// testClient is the generated client interface.
type testClient = grpc_testing.TestServiceClient

var grpcUnaryInfo = grpc.UnaryServerInfo{FullMethod: "/grpc.testing.TestService/UnaryCall"}
