package grpcbudget_test

import (
	"context"
	"fmt"
	"github.com/timebudget/budget/edge"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

type exampleService struct {
	grpc_testing.UnimplementedTestServiceServer
}

func (exampleService) EmptyCall(ctx context.Context, _ *grpc_testing.Empty) (*grpc_testing.Empty, error) {
	left, _ := budget.Remaining(ctx)
	fmt.Println("handler has", left.Round(100*time.Millisecond))
	return &grpc_testing.Empty{}, nil
}

func ExampleUnaryServerInterceptor() {
	// What grpc-go cannot say on its own: at most 2 s whatever the client
	// asks, nothing started with under 50 ms, 100 ms kept to answer.
	policy := &wire.Policy{Max: 2 * time.Second, Min: 50 * time.Millisecond, AnswerMargin: 100 * time.Millisecond}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(
		grpcbudget.UnaryServerInterceptor(edge.WithPolicy(policy), edge.WithStage("checkout"))))
	grpc_testing.RegisterTestServiceServer(srv, exampleService{})
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(lis)
	defer srv.Stop()

	conn, _ := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(grpcbudget.UnaryClientInterceptor()))
	defer conn.Close()
	client := grpc_testing.NewTestServiceClient(conn)

	for _, timeout := range []time.Duration{5 * time.Second, 20 * time.Millisecond} {
		ctx, cancel := budget.Start(context.Background(), timeout)
		_, err := client.EmptyCall(ctx, &grpc_testing.Empty{})
		cancel()
		if err != nil {
			fmt.Println(status.Code(err), status.Convert(err).Message())
		}
	}
	// Output:
	// handler has 1.9s
	// DeadlineExceeded budget: checkout refused on arrival: too little time left
}
