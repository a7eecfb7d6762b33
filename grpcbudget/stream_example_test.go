package grpcbudget_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"

	"github.com/timebudget/budget/grpcbudget"
)

type echoStreams struct {
	grpc_testing.UnimplementedTestServiceServer
}

// FullDuplexCall answers each message under its own budget: a message whose
// handling outlives it is answered "too slow", and the stream goes on.
func (echoStreams) FullDuplexCall(stream grpc_testing.TestService_FullDuplexCallServer) error {
	return grpcbudget.EachMessage(stream, func(ctx context.Context, req *grpc_testing.StreamingOutputCallRequest) error {
		body := string(req.GetPayload().GetBody())
		if body == "slow" {
			<-ctx.Done() // work that takes longer than the message's budget
			body = "too slow"
		}
		return stream.Send(&grpc_testing.StreamingOutputCallResponse{Payload: &grpc_testing.Payload{Body: []byte(body)}})
	})
}

func ExampleEachMessage() {
	// Each message gets 50 ms, however long the stream lives; a client that
	// sends nothing for a minute is dropped.
	srv := grpc.NewServer(grpc.ChainStreamInterceptor(grpcbudget.StreamServerInterceptor(
		grpcbudget.WithMessageBudget(50*time.Millisecond), grpcbudget.WithIdleTimeout(time.Minute))))
	grpc_testing.RegisterTestServiceServer(srv, echoStreams{})
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(lis)
	defer srv.Stop()

	conn, _ := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer conn.Close()
	stream, err := grpc_testing.NewTestServiceClient(conn).FullDuplexCall(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, body := range []string{"first", "slow", "third"} {
		_ = stream.Send(&grpc_testing.StreamingOutputCallRequest{Payload: &grpc_testing.Payload{Body: []byte(body)}})
	}
	_ = stream.CloseSend()
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(string(resp.GetPayload().GetBody()))
	}
	// Output:
	// first
	// too slow
	// third
}
