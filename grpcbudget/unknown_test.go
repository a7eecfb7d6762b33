package grpcbudget_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
)

// TestUnknownMethodsShareOneStage: on a server with an UnknownServiceHandler,
// the method names clients send for methods the server did not register
// never become stages (a client could mint any number of them); they are
// all reported as UnknownMethodStage, while registered methods keep theirs.
func TestUnknownMethodsShareOneStage(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	stages := map[string]bool{}
	obs := budget.ObserverFunc(func(_ context.Context, ev budget.Event) {
		if ev.Kind == budget.EventArrival {
			mu.Lock()
			stages[ev.Stage] = true
			mu.Unlock()
		}
	})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts := []edge.ServerOption{edge.WithObserver(obs)}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpcbudget.UnaryServerInterceptor(opts...)),
		grpc.ChainStreamInterceptor(grpcbudget.StreamServerInterceptor(opts...)),
		grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
			return status.Error(codes.Unimplemented, "no such method")
		}))
	grpc_testing.RegisterTestServiceServer(srv, &testService{})
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(); srv.Stop(); <-done })

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, method := range []string{"/evil.Service/A", "/evil.Service/B", "/grpc.testing.TestService/Nope" + strconv.Itoa(1)} {
		err := conn.Invoke(ctx, method, &grpc_testing.Empty{}, &grpc_testing.Empty{})
		if status.Code(err) != codes.Unimplemented {
			t.Fatalf("%s: %v, want Unimplemented from the unknown-service handler", method, err)
		}
	}
	c := grpc_testing.NewTestServiceClient(conn)
	if _, err := c.EmptyCall(ctx, &grpc_testing.Empty{}); err != nil {
		t.Fatal(err)
	}
	st, err := c.StreamingOutputCall(ctx, &grpc_testing.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := st.Recv(); err != nil {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for s := range stages {
		got = append(got, s)
	}
	slices.Sort(got)
	want := []string{"/grpc.testing.TestService/EmptyCall", "/grpc.testing.TestService/StreamingOutputCall", grpcbudget.UnknownMethodStage}
	if !slices.Equal(got, want) {
		t.Errorf("stages %q, want %q", got, want)
	}
}
