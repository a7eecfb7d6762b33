package grpcbudget_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
)

// unaryFunc is a TestService whose UnaryCall answers what a function says.
type unaryFunc struct {
	grpc_testing.UnimplementedTestServiceServer
	f func(ctx context.Context) (string, error)
}

func (s unaryFunc) UnaryCall(ctx context.Context, _ *grpc_testing.SimpleRequest) (*grpc_testing.SimpleResponse, error) {
	body, err := s.f(ctx)
	if err != nil {
		return nil, err
	}
	return &grpc_testing.SimpleResponse{Payload: &grpc_testing.Payload{Body: []byte(body)}}, nil
}

// serveLoopback serves f over loopback TCP with grpcbudget's interceptor and
// returns the address.
func serveLoopback(t *testing.T, f func(ctx context.Context) (string, error)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(grpcbudget.UnaryServerInterceptor()))
	grpc_testing.RegisterTestServiceServer(srv, unaryFunc{f: f})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func dialLoopback(t *testing.T, addr string) grpc_testing.TestServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(grpcbudget.UnaryClientInterceptor()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return grpc_testing.NewTestServiceClient(conn)
}

// TestTwoHopsRecoverOverLoopback: an edge with Op{Prior} calls a backend
// whose Op{Prior} guards a database, over gRPC on loopback; the database
// hangs for 1.5 s, then heals. On v0.3.1 the edge's probes were refused by
// the backend's probe floor and the edge stayed on its fallback for good.
// The edge must answer from the backend again within 1.5 s of the heal
// (the bound on virtual time is 1 s; half a second more for a shared
// machine) and from the backend for at least 80 % of requests from 1 s to
// 3 s after it.
func TestTwoHopsRecoverOverLoopback(t *testing.T) {
	t.Parallel()
	for _, priors := range [][2]time.Duration{{20 * time.Millisecond, 20 * time.Millisecond}, {10 * time.Millisecond, 50 * time.Millisecond}} {
		t.Run(fmt.Sprintf("%v/%v", priors[0], priors[1]), func(t *testing.T) {
			t.Parallel()
			var hanging atomic.Bool
			db := &budget.Op{Name: "db", Prior: priors[1]}
			backend := dialLoopback(t, serveLoopback(t, func(ctx context.Context) (string, error) {
				return "backend", db.Do(ctx, func(ctx context.Context) error {
					wait := 5 * time.Millisecond
					if hanging.Load() {
						wait = time.Hour
					}
					select {
					case <-time.After(wait):
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				})
			}))
			toBackend := &budget.Op{Name: "backend", Prior: priors[0]}
			edge := dialLoopback(t, serveLoopback(t, func(ctx context.Context) (string, error) {
				err := toBackend.Do(ctx, func(ctx context.Context) error {
					_, err := backend.UnaryCall(ctx, &grpc_testing.SimpleRequest{})
					return err
				})
				if err != nil {
					return "fallback", nil
				}
				return "backend", nil
			}))
			start := time.Now()
			healed := start.Add(2500 * time.Millisecond)
			var mu sync.Mutex
			var firstAt time.Time
			var ok, sent int
			var wg sync.WaitGroup
			for time.Since(start) < 6*time.Second {
				hanging.Store(time.Since(start) >= time.Second && time.Now().Before(healed))
				at := time.Now()
				wg.Go(func() {
					ctx, cancel := budget.Start(context.Background(), 300*time.Millisecond)
					defer cancel()
					res, err := edge.UnaryCall(ctx, &grpc_testing.SimpleRequest{})
					answered := err == nil && string(res.GetPayload().GetBody()) == "backend"
					mu.Lock()
					defer mu.Unlock()
					if answered && !at.Before(healed) && (firstAt.IsZero() || at.Before(firstAt)) {
						firstAt = at
					}
					if since := at.Sub(healed); since >= time.Second && since < 3*time.Second {
						sent++
						if answered {
							ok++
						}
					}
				})
				time.Sleep(20 * time.Millisecond)
			}
			wg.Wait()
			if firstAt.IsZero() {
				t.Logf("no answer from the backend after the heal; %d of %d from 1 s to 3 s after", ok, sent)
				t.Fatal("no answer from the backend after the database healed")
			}
			t.Logf("first answer from the backend %v after the heal; %d of %d from 1 s to 3 s after", firstAt.Sub(healed), ok, sent)
			if d := firstAt.Sub(healed); d > 1500*time.Millisecond {
				t.Fatalf("first answer from the backend %v after the database healed; want within 1.5 s", d)
			}
			if sent == 0 || float64(ok) < 0.8*float64(sent) {
				t.Fatalf("%d of %d requests answered from the backend from 1 s to 3 s after the heal; want at least 80%%", ok, sent)
			}
		})
	}
}
