package grpcbudget_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/timebudget/budget/grpcbudget"
)

type plainService struct {
	grpc_testing.UnimplementedTestServiceServer
}

func (plainService) EmptyCall(context.Context, *grpc_testing.Empty) (*grpc_testing.Empty, error) {
	return &grpc_testing.Empty{}, nil
}

// The budget-aware balancer is chosen in the service config, like grpc-go's
// own; here over two replicas that a resolver (DNS, xDS or, as here, a
// fixed list) reports.
func ExampleBalancerName() {
	res := manual.NewBuilderWithScheme("example")
	var eps []resolver.Endpoint
	for range 2 {
		srv := grpc.NewServer()
		grpc_testing.RegisterTestServiceServer(srv, plainService{})
		lis, _ := net.Listen("tcp", "127.0.0.1:0")
		go srv.Serve(lis)
		defer srv.Stop()
		eps = append(eps, resolver.Endpoint{Addresses: []resolver.Address{{Addr: lis.Addr().String()}}})
	}
	res.InitialState(resolver.State{Endpoints: eps})

	conn, err := grpc.NewClient(res.Scheme()+":///checkout", grpc.WithResolvers(res),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"`+grpcbudget.BalancerName+`":{}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	// Each call goes to a replica likely to answer within its deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = grpc_testing.NewTestServiceClient(conn).EmptyCall(ctx, &grpc_testing.Empty{}, grpc.WaitForReady(true))
	fmt.Println("answered:", err == nil)
	// Output: answered: true
}
