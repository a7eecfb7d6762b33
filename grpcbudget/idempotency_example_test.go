package grpcbudget_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/idempotency"
)

// chargeService charges once per call it runs.
type chargeService struct {
	grpc_testing.UnimplementedTestServiceServer
	charges int
}

func (s *chargeService) UnaryCall(context.Context, *grpc_testing.SimpleRequest) (*grpc_testing.SimpleResponse, error) {
	s.charges++
	return &grpc_testing.SimpleResponse{Username: fmt.Sprint("charge #", s.charges)}, nil
}

// A retried call with an idempotency key runs the handler once: the repeat
// gets the first answer, marked replayed.
func ExampleIdempotentUnaryServerInterceptor() {
	svc := &chargeService{}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(
		grpcbudget.UnaryServerInterceptor(),
		grpcbudget.IdempotentUnaryServerInterceptor(&idempotency.MemoryStore{})))
	grpc_testing.RegisterTestServiceServer(srv, svc)
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(lis)
	defer srv.Stop()

	conn, _ := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(grpcbudget.UnaryClientInterceptor()))
	defer conn.Close()
	client := grpc_testing.NewTestServiceClient(conn)

	ctx, cancel := budget.Start(context.Background(), 5*time.Second)
	defer cancel()
	ctx = budget.WithIdempotencyKey(ctx) // once per logical call, before any retry
	for range 2 {
		var header metadata.MD
		resp, err := client.UnaryCall(ctx, &grpc_testing.SimpleRequest{}, grpc.Header(&header))
		fmt.Println(resp.GetUsername(), err, header[grpcbudget.IdempotentReplayedKey])
	}
	fmt.Println("charges:", svc.charges)
	// Output:
	// charge #1 <nil> []
	// charge #1 <nil> [true]
	// charges: 1
}
