package grpcbudget_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

func bare(ctx context.Context, req any) (any, error) { return nil, nil }

// benchContext is what grpc-go hands a unary interceptor for a call that
// carries grpc-timeout and our two metadata entries: the deadline it derived
// from grpc-timeout and the incoming metadata.
func benchContext(b testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	b.Cleanup(cancel)
	return metadata.NewIncomingContext(ctx, metadata.MD{
		"request-timeout-ms": {"1500"},
		"request-deadline":   {"1700000001500"},
		"user-agent":         {"grpc-go/1.85.0"},
		"content-type":       {"application/grpc"},
		":authority":         {"127.0.0.1"},
	})
}

func benchInterceptor(b *testing.B, u grpc.UnaryServerInterceptor) {
	b.ReportAllocs()
	ctx := benchContext(b)
	for b.Loop() {
		if _, err := u(ctx, nil, &grpcUnaryInfo, bare); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandlerDirect is the floor: the handler called directly, as
// grpc-go calls it without interceptors.
func BenchmarkHandlerDirect(b *testing.B) {
	benchInterceptor(b, func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(ctx, req)
	})
}

// BenchmarkUnaryServerInterceptor is the default policy over the bare
// handler, for a call carrying grpc-timeout and our two metadata entries.
func BenchmarkUnaryServerInterceptor(b *testing.B) {
	benchInterceptor(b, grpcbudget.UnaryServerInterceptor())
}

// BenchmarkUnaryServerInterceptorNoLedger is the same without a per-call
// ledger.
func BenchmarkUnaryServerInterceptorNoLedger(b *testing.B) {
	benchInterceptor(b, grpcbudget.UnaryServerInterceptor(edge.WithLedgerCapacity(-1)))
}

// BenchmarkUnaryServerInterceptorShed is a call refused on arrival.
func BenchmarkUnaryServerInterceptorShed(b *testing.B) {
	b.ReportAllocs()
	u := grpcbudget.UnaryServerInterceptor(edge.WithPolicy(&wire.Policy{Min: 2 * time.Hour}))
	ctx := benchContext(b)
	for b.Loop() {
		if _, err := u(ctx, nil, &grpcUnaryInfo, bare); err == nil {
			b.Fatal("not shed")
		}
	}
}

func nopInvoker(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
	return nil
}

// BenchmarkUnaryClientInterceptor is the client side over an invoker that
// returns at once, for a call with a budget; WithBudgetMetadata adds the two
// metadata entries.
func BenchmarkUnaryClientInterceptor(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts []edge.ClientOption
	}{{"grpc-timeout", nil}, {"metadata", []edge.ClientOption{grpcbudget.WithBudgetMetadata()}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			u := grpcbudget.UnaryClientInterceptor(bc.opts...)
			ctx, cancel := budget.Start(context.Background(), time.Hour)
			defer cancel()
			for b.Loop() {
				if err := u(ctx, "/svc/M", nil, nil, nil, nopInvoker); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRoundTrip is a full unary call over loopback, without and with our
// interceptors on both sides.
func BenchmarkRoundTrip(b *testing.B) {
	for _, bc := range []struct {
		name   string
		server []grpc.ServerOption
		dial   []grpc.DialOption
	}{
		{"plain", nil, nil},
		{"interceptors", withServer(grpcbudget.UnaryServerInterceptor(), grpcbudget.StreamServerInterceptor()), withClient()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			c, _ := serve(b, bc.server, bc.dial...)
			ctx, cancel := budget.Start(context.Background(), time.Hour)
			defer cancel()
			req := &grpc_testing.Empty{}
			for b.Loop() {
				if _, err := c.EmptyCall(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestInterceptorAllocations(t *testing.T) {
	ctx := benchContext(t)
	server := func(u grpc.UnaryServerInterceptor) float64 {
		return testing.AllocsPerRun(500, func() { _, _ = u(ctx, nil, &grpcUnaryInfo, bare) })
	}
	// Measured: metadata.FromIncomingContext copies the map and each of its
	// five slices (6), the grpc-timeout carried over from the deadline adds
	// its value and slice (2), Start adds the deadline context's four and
	// one block for the budget's context, state and ledger (14 in all, with
	// or without the ledger). A shed call allocates the metadata copy, the carried-over
	// value and its error (11). The client sends grpc-timeout through the
	// context it is given, at no cost; our metadata costs the two values,
	// the pairs and grpc-go's outgoing-metadata context (7). Every call
	// allocates one block for the call options that tell how far a failed
	// attempt got (grpc.Peer and grpc.Trailer): 1 and 8.
	const (
		maxServer         = 14
		maxServerNoLedger = 14
		maxShed           = 11
		maxClient         = 1
		maxClientMetadata = 8
	)
	if got := server(grpcbudget.UnaryServerInterceptor()); got > maxServer {
		t.Errorf("server interceptor: %v allocations, want at most %d", got, maxServer)
	}
	if got := server(grpcbudget.UnaryServerInterceptor(edge.WithLedgerCapacity(-1))); got > maxServerNoLedger {
		t.Errorf("server interceptor without a ledger: %v allocations, want at most %d", got, maxServerNoLedger)
	}
	if got := server(grpcbudget.UnaryServerInterceptor(edge.WithPolicy(&wire.Policy{Min: 2 * time.Hour}))); got > maxShed {
		t.Errorf("a shed call: %v allocations, want at most %d", got, maxShed)
	}
	bctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	client := func(u grpc.UnaryClientInterceptor) float64 {
		return testing.AllocsPerRun(500, func() { _ = u(bctx, "/svc/M", nil, nil, nil, nopInvoker) })
	}
	if got := client(grpcbudget.UnaryClientInterceptor()); got > maxClient {
		t.Errorf("client interceptor: %v allocations, want at most %d", got, maxClient)
	}
	if got := client(grpcbudget.UnaryClientInterceptor(grpcbudget.WithBudgetMetadata())); got > maxClientMetadata {
		t.Errorf("client interceptor with metadata: %v allocations, want at most %d", got, maxClientMetadata)
	}
}
