package grpcbudget_test

import (
	"context"
	"fmt"
	"github.com/timebudget/budget/edge"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

type classService struct {
	grpc_testing.UnimplementedTestServiceServer
}

func (classService) EmptyCall(ctx context.Context, _ *grpc_testing.Empty) (*grpc_testing.Empty, error) {
	fmt.Println("handler runs as", budget.CriticalityFrom(ctx))
	return &grpc_testing.Empty{}, nil
}

// A gRPC edge ignores the class a client sends and classifies by method;
// the handler runs with the class, and a client interceptor on its own calls
// would forward it as request-criticality metadata.
func ExampleWithClassifier() {
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(grpcbudget.UnaryServerInterceptor(
		edge.WithPolicy(&wire.Policy{Trust: wire.SourcesNone, Max: 2 * time.Second}),
		grpcbudget.WithClassifier(func(_ context.Context, fullMethod string) budget.Criticality {
			if strings.HasSuffix(fullMethod, "/EmptyCall") {
				return budget.Critical
			}
			return budget.Sheddable
		}))))
	grpc_testing.RegisterTestServiceServer(srv, classService{})
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(lis)
	defer srv.Stop()

	conn, _ := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(grpcbudget.UnaryClientInterceptor()))
	defer conn.Close()
	// The client says sheddable; the edge does not trust it.
	ctx := budget.WithCriticality(context.Background(), budget.Sheddable)
	_, _ = grpc_testing.NewTestServiceClient(conn).EmptyCall(ctx, &grpc_testing.Empty{})
	// Output:
	// handler runs as critical
}
