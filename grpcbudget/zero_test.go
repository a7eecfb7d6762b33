package grpcbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

// bareServerStream is the least a server stream can be: a context.
type bareServerStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s bareServerStream) Context() context.Context { return s.ctx }

// TestZeroValues runs every exported entry point of the package with zero values
// and nil arguments: none may panic, and each answers as documented or with an
// error naming what is missing. The interceptors are called as grpc-go calls
// them, which always passes the call's info and stream.
func TestZeroValues(t *testing.T) {
	t.Parallel()
	var nilOps edge.Ops
	var nilCtx context.Context // careless, but documented to work
	serverOpts := []edge.ServerOption{nil, edge.WithPolicy(nil), edge.WithSwitch(nil),
		edge.WithStage(""), edge.WithObserver(nil), edge.WithLedgerCapacity(0),
		edge.WithAdmission(nil), edge.WithAdmission(nilOps.Op), edge.WithAdmission(edge.Ops{"": nil}.Op)}
	clientOpts := []edge.ClientOption{nil, edge.WithTransit(0), edge.WithMinUseful(0),
		grpcbudget.WithBudgetMetadata(), edge.WithAdmission(nil), edge.WithAdmission(nilOps.Op)}
	unaryOK := func(context.Context, any) (any, error) { return "ok", nil }
	invokeOK := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	streamOK := func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
		return &fakeStream{recv: []error{nil}}, nil
	}
	zeroMD := metadata.NewIncomingContext(context.Background(), metadata.MD{"request-timeout-ms": {"0"}})

	checks := []struct {
		name string
		ok   func() bool
	}{
		{"CodeOf(nil, nil)", func() bool { return grpcbudget.CodeOf(nilCtx, nil) == codes.OK }},
		{"CodeOf(nil, err)", func() bool { return grpcbudget.CodeOf(nilCtx, context.Canceled) == codes.Canceled }},
		{"Ops(nil).Op", func() bool { return nilOps.Op("") == nil }},
		{"UnaryServerInterceptor, zero options", func() bool {
			resp, err := grpcbudget.UnaryServerInterceptor(serverOpts...)(context.Background(), nil, &grpc.UnaryServerInfo{}, unaryOK)
			return resp == "ok" && err == nil
		}},
		{"UnaryServerInterceptor, no options, expired, empty method", func() bool {
			_, err := grpcbudget.UnaryServerInterceptor()(zeroMD, nil, &grpc.UnaryServerInfo{}, unaryOK)
			return status.Code(err) == codes.DeadlineExceeded
		}},
		{"StreamServerInterceptor, zero options", func() bool {
			err := grpcbudget.StreamServerInterceptor(serverOpts...)(nil, bareServerStream{ctx: context.Background()},
				&grpc.StreamServerInfo{}, func(any, grpc.ServerStream) error { return nil })
			return err == nil
		}},
		{"UnaryClientInterceptor, zero options", func() bool {
			return grpcbudget.UnaryClientInterceptor(clientOpts...)(context.Background(), "", nil, nil, nil, invokeOK) == nil
		}},
		{"UnaryClientInterceptor, nil invoker", func() bool {
			err := grpcbudget.UnaryClientInterceptor(clientOpts...)(context.Background(), "", nil, nil, nil, nil)
			return errors.Is(err, budget.ErrMisconfigured)
		}},
		{"StreamClientInterceptor, zero options, nil desc", func() bool {
			cs, err := grpcbudget.StreamClientInterceptor(clientOpts...)(context.Background(), nil, nil, "", streamOK)
			return err == nil && cs.RecvMsg(nil) == nil
		}},
		{"StreamClientInterceptor, nil streamer", func() bool {
			_, err := grpcbudget.StreamClientInterceptor(clientOpts...)(context.Background(), nil, nil, "", nil)
			return errors.Is(err, budget.ErrMisconfigured)
		}},
		{"edge.WithPolicy(zero)", func() bool {
			_ = grpcbudget.UnaryServerInterceptor(edge.WithPolicy(&wire.Policy{}))
			return true
		}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panicked: %v", r)
				}
			}()
			if !c.ok() {
				t.Fatal("did not give the documented answer")
			}
		})
	}
}
