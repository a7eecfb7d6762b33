package e2e_test

import (
	"context"
	"fmt"
	"github.com/timebudget/budget/edge"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/idempotency"
	"github.com/timebudget/budget/pgxbudget"
	"github.com/timebudget/budget/wire"
)

const envPostgres = "BUDGET_TEST_POSTGRES"

// postgresURL returns the test server's URL, skipping the test when it is
// not set outside CI and failing it under CI=true.
func postgresURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv(envPostgres)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI must run the PostgreSQL tests", envPostgres)
		}
		t.Skipf("set %s (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run against PostgreSQL", envPostgres)
	}
	return u
}

var pgTables atomic.Int32

// pgStore returns an idempotency store in a table of its own on the test
// server, dropped when the test ends; with closed, on a pool already
// closed: a store that is down.
func pgStore(t *testing.T, o pgxbudget.IdempotencyOptions, closed bool) idempotency.Store {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(postgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 8
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := pgxbudget.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	o.Table = fmt.Sprintf("e2e_idem_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, pgTables.Add(1))
	s, err := pgxbudget.NewIdempotencyStore(p, o)
	if err != nil {
		t.Fatal(err)
	}
	if closed {
		p.Close()
		return s
	}
	if err := s.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := p.Pool().Exec(ctx, `DROP TABLE IF EXISTS `+o.Table); err != nil {
			t.Errorf("dropping %s: %v", o.Table, err)
		}
		p.Close()
	})
	return s
}

// charge is the work behind both protocols: it counts its runs and, for a
// body "sleep:<d>", takes d.
type charge struct{ runs atomic.Int32 }

func (c *charge) do(ctx context.Context, body string) (*grpc_testing.SimpleResponse, error) {
	n := c.runs.Add(1)
	if d, err := time.ParseDuration(strings.TrimPrefix(body, "sleep:")); err == nil {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &grpc_testing.SimpleResponse{Username: fmt.Sprint("run ", n)}, nil
}

// idemCall makes one unary call with body and says whether its answer was
// replayed, what it said, and its code.
type idemCall func(ctx context.Context, body string) (replayed bool, answer string, code codes.Code)

// answerMargin is kept by the servers' budget, so that a repeat's refusal
// reaches its caller before the caller's deadline on a busy machine.
var answerMargin = &wire.Policy{AnswerMargin: 100 * time.Millisecond}

// grpcIdempotent serves the charge over gRPC behind grpcbudget's
// interceptors on store, and returns how to call it.
func grpcIdempotent(t *testing.T, store idempotency.Store, c *charge) idemCall {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(grpcbudget.UnaryServerInterceptor(edge.WithPolicy(answerMargin)),
		grpcbudget.IdempotentUnaryServerInterceptor(store)))
	grpc_testing.RegisterTestServiceServer(srv, &grpcCharge{c: c})
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(grpcbudget.UnaryClientInterceptor()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(); srv.Stop(); <-done })
	client := grpc_testing.NewTestServiceClient(conn)
	return func(ctx context.Context, body string) (bool, string, codes.Code) {
		var h metadata.MD
		resp, err := client.UnaryCall(ctx, &grpc_testing.SimpleRequest{Payload: &grpc_testing.Payload{Body: []byte(body)}}, grpc.Header(&h))
		return len(h[grpcbudget.IdempotentReplayedKey]) > 0, resp.GetUsername(), status.Code(err)
	}
}

type grpcCharge struct {
	grpc_testing.UnimplementedTestServiceServer
	c *charge
}

func (g *grpcCharge) UnaryCall(ctx context.Context, req *grpc_testing.SimpleRequest) (*grpc_testing.SimpleResponse, error) {
	return g.c.do(ctx, string(req.GetPayload().GetBody()))
}

// connectIdempotent serves the charge over Connect behind connectbudget's
// interceptors on store, and returns how to call it.
func connectIdempotent(t *testing.T, store idempotency.Store, c *charge) idemCall {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(unaryCall, connect.NewUnaryHandler(unaryCall,
		func(ctx context.Context, req *connect.Request[grpc_testing.SimpleRequest]) (*connect.Response[grpc_testing.SimpleResponse], error) {
			resp, err := c.do(ctx, string(req.Msg.GetPayload().GetBody()))
			if err != nil {
				return nil, err
			}
			return connect.NewResponse(resp), nil
		}, connect.WithInterceptors(connectbudget.NewServerInterceptor(edge.WithPolicy(answerMargin)),
			connectbudget.NewIdempotentInterceptor(store))))
	srv := httptest.NewServer(mux)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	t.Cleanup(func() { hc.CloseIdleConnections(); srv.CloseClientConnections(); srv.Close() })
	client := connect.NewClient[grpc_testing.SimpleRequest, grpc_testing.SimpleResponse](hc, srv.URL+unaryCall,
		connect.WithInterceptors(connectbudget.NewClientInterceptor()))
	return func(ctx context.Context, body string) (bool, string, codes.Code) {
		resp, err := client.CallUnary(ctx, connect.NewRequest(&grpc_testing.SimpleRequest{Payload: &grpc_testing.Payload{Body: []byte(body)}}))
		if err != nil {
			return false, "", codes.Code(connect.CodeOf(err))
		}
		return resp.Header().Get(connectbudget.HeaderIdempotentReplayed) == "true", resp.Msg.GetUsername(), codes.OK
	}
}

// keyedBudget returns a context with a budget of d and an idempotency key.
func keyedBudget(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := budget.Start(context.Background(), d)
	t.Cleanup(cancel)
	return budget.WithIdempotencyKey(ctx)
}

// The idempotency middleware of gRPC and Connect on the PostgreSQL store:
// a finished key is replayed, a changed payload is refused, a concurrent
// duplicate waits for the first answer or (out of budget) gets ABORTED, an
// expired key runs again, a store that is down fails closed with
// UNAVAILABLE, and 200 concurrent retries of one key run the handler once.
func TestIdempotentGRPCAndConnectOnPostgres(t *testing.T) {
	postgresURL(t)
	store := pgStore(t, pgxbudget.IdempotencyOptions{}, false)
	for _, proto := range []struct {
		name  string
		serve func(*testing.T, idempotency.Store, *charge) idemCall
	}{{"grpc", grpcIdempotent}, {"connect", connectIdempotent}} {
		t.Run(proto.name, func(t *testing.T) {
			t.Run("replay", func(t *testing.T) {
				c := new(charge)
				call := proto.serve(t, store, c)
				ctx := keyedBudget(t, 10*time.Second)
				_, first, code1 := call(ctx, "10")
				replayed, again, code2 := call(ctx, "10")
				if code1 != codes.OK || code2 != codes.OK || !replayed || again != first || c.runs.Load() != 1 {
					t.Fatalf("first %v %q, repeat %v %q replayed %v, after %d runs: want the first answer replayed after 1",
						code1, first, code2, again, replayed, c.runs.Load())
				}
			})
			t.Run("changed payload", func(t *testing.T) {
				c := new(charge)
				call := proto.serve(t, store, c)
				ctx := keyedBudget(t, 10*time.Second)
				call(ctx, "10")
				if _, _, code := call(ctx, "99"); code != codes.InvalidArgument || c.runs.Load() != 1 {
					t.Fatalf("the key with another payload: %v after %d runs, want INVALID_ARGUMENT after 1", code, c.runs.Load())
				}
			})
			t.Run("concurrent duplicate", func(t *testing.T) {
				c := new(charge)
				call := proto.serve(t, store, c)
				ctx := keyedBudget(t, 10*time.Second)
				first := make(chan codes.Code, 1)
				go func() { _, _, code := call(ctx, "sleep:1s"); first <- code }()
				for c.runs.Load() == 0 {
					time.Sleep(time.Millisecond)
				}
				short, cancel := budget.Start(ctx, 300*time.Millisecond) // the same key
				defer cancel()
				if _, _, code := call(short, "sleep:1s"); code != codes.Aborted {
					t.Errorf("a duplicate out of budget: %v, want ABORTED", code)
				}
				replayed, _, code := call(ctx, "sleep:1s")
				if code != codes.OK || !replayed {
					t.Errorf("a duplicate that waited: %v, replayed %v; want the first answer", code, replayed)
				}
				if code := <-first; code != codes.OK || c.runs.Load() != 1 {
					t.Fatalf("first %v after %d runs, want OK after 1", code, c.runs.Load())
				}
			})
			t.Run("expired key", func(t *testing.T) {
				c := new(charge)
				call := proto.serve(t, pgStore(t, pgxbudget.IdempotencyOptions{TTL: time.Second}, false), c)
				ctx := keyedBudget(t, 10*time.Second)
				call(ctx, "10")
				time.Sleep(1500 * time.Millisecond) // past the store's TTL of 1 s
				if replayed, _, code := call(ctx, "10"); code != codes.OK || replayed || c.runs.Load() != 2 {
					t.Fatalf("a key past its TTL: %v, replayed %v, after %d runs: want a second run", code, replayed, c.runs.Load())
				}
			})
			t.Run("store down", func(t *testing.T) {
				c := new(charge)
				call := proto.serve(t, pgStore(t, pgxbudget.IdempotencyOptions{}, true), c)
				if _, _, code := call(keyedBudget(t, 10*time.Second), "10"); code != codes.Unavailable || c.runs.Load() != 0 {
					t.Fatalf("store down: %v after %d runs, want UNAVAILABLE after 0", code, c.runs.Load())
				}
			})
			t.Run("200 concurrent retries", func(t *testing.T) {
				c := new(charge)
				call := proto.serve(t, store, c)
				ctx := keyedBudget(t, 30*time.Second)
				var failed atomic.Int32
				var wg sync.WaitGroup
				for range 200 {
					wg.Go(func() {
						if _, answer, code := call(ctx, "sleep:50ms"); code != codes.OK || answer != "run 1" {
							failed.Add(1)
						}
					})
				}
				wg.Wait()
				if c.runs.Load() != 1 || failed.Load() != 0 {
					t.Fatalf("the handler ran %d times and %d calls did not get its answer; want 1 and 0", c.runs.Load(), failed.Load())
				}
			})
		})
	}
}
