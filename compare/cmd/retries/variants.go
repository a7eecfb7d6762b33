package main

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/failsafe-go/failsafe-go"
	fsbudget "github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/idempotency"
)

// attempts is every hop's attempts per call, the first included.
const attempts = 3

// naiveChain retries every failure 3 times at every hop after 10 ms, each
// attempt under a client timeout of the request's budget, as code without
// a retry library does.
func naiveChain(cfg config, b *bottom) (chain, error) {
	post := b.fault == faultPayment
	call := func(url string) caller {
		client := &http.Client{Timeout: cfg.Budget}
		return func(ctx context.Context, id string) error {
			var err error
			for n := range attempts {
				if n > 0 {
					select {
					case <-ctx.Done():
						return err
					case <-time.After(10 * time.Millisecond):
					}
				}
				if err = send(ctx, client, url, id, post); err == nil {
					return nil
				}
			}
			return err
		}
	}
	return httpChain(bottomHTTP(b), hopHTTP, call)
}

// failsafeChain is failsafe-go's retry policy (3 attempts, backoff from
// 10 ms to 100 ms) with a retry budget per hop, as its docs configure it
// (budget.New(): retries at most 20 % of executions in flight, at least 3),
// each attempt under a client timeout of the request's budget.
func failsafeChain(cfg config, b *bottom) (chain, error) {
	post := b.fault == faultPayment
	call := func(url string) caller {
		client := &http.Client{Timeout: cfg.Budget}
		policy := retrypolicy.NewBuilder[any]().
			WithMaxAttempts(attempts).
			WithBackoff(10*time.Millisecond, 100*time.Millisecond).
			WithBudget(fsbudget.New()).
			Build()
		exec := failsafe.With[any](policy)
		return func(ctx context.Context, id string) error {
			return exec.WithContext(ctx).RunWithExecution(func(e failsafe.Execution[any]) error {
				return send(e.Context(), client, url, id, post)
			})
		}
	}
	return httpChain(bottomHTTP(b), hopHTTP, call)
}

// budgetChain is this library as a user writes it without knowing the
// faults: an Op per dependency, a Retry with a zero RetryQuota per client,
// httpbudget on both sides, an idempotency key per logical call for the
// payment, and httpbudget.Idempotent with a memory store at the bottom.
func budgetChain(cfg config, b *bottom) (chain, error) {
	post := b.fault == faultPayment
	call := func(url string) caller {
		client := &http.Client{Transport: httpbudget.NewTransport(nil)}
		op := &budget.Op{Name: "next"}
		retry := &budget.Retry{Quota: &budget.RetryQuota{}}
		return func(ctx context.Context, id string) error {
			if post {
				ctx = budget.WithIdempotencyKey(ctx)
			}
			return retry.Do(ctx, op, func(ctx context.Context) error {
				return send(ctx, client, url, id, post)
			})
		}
	}
	hop := func(next caller) http.Handler {
		return httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := next(r.Context(), r.Header.Get(headerRequestID)); err != nil {
				httpbudget.WriteError(w, err)
			}
		}))
	}
	bottomH := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := b.serve(r.Context(), r.Header.Get(headerRequestID)); err != nil {
			httpbudget.WriteError(w, err)
		}
	})
	ch, err := httpChain(httpbudget.NewHandler(httpbudget.Idempotent(&idempotency.MemoryStore{}, bottomH)), hop, call)
	if err != nil {
		return ch, err
	}
	top := ch.top
	ch.top = func(ctx context.Context, id string) error {
		ctx, cancel := budget.Start(ctx, cfg.Budget)
		defer cancel()
		return top(ctx, id)
	}
	return ch, nil
}

// grpcServiceConfig is grpc-go's retry policy, 3 attempts of UNAVAILABLE
// calls, with retryThrottling as gRFC A6 gives it as an example.
const grpcServiceConfig = `{
  "methodConfig": [{
    "name": [{"service": "grpc.health.v1.Health"}],
    "retryPolicy": {
      "maxAttempts": 3,
      "initialBackoff": "0.01s",
      "maxBackoff": "0.1s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
}`

// grpcChain is the chain over gRPC (the health service's Check as the
// call), each client retrying with grpc-go's own retry policy, the
// request's budget as the top call's deadline, which gRPC propagates.
func grpcChain(cfg config, b *bottom) (chain, error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	serve := func(check func(ctx context.Context, id string) error) (string, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		s := grpc.NewServer()
		healthpb.RegisterHealthServer(s, &checker{check: check})
		go func() { _ = s.Serve(ln) }()
		closers = append(closers, s.Stop)
		return ln.Addr().String(), nil
	}
	dial := func(addr string) (caller, error) {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultServiceConfig(grpcServiceConfig))
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() { _ = conn.Close() })
		client := healthpb.NewHealthClient(conn)
		return func(ctx context.Context, id string) error {
			ctx = metadata.AppendToOutgoingContext(ctx, "x-request-id", id)
			_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
			return err
		}, nil
	}
	addr, err := serve(func(ctx context.Context, id string) error {
		if err := b.serve(ctx, id); err != nil {
			return status.Error(codes.Unavailable, err.Error())
		}
		return nil
	})
	for range 2 {
		var next caller
		if err == nil {
			next, err = dial(addr)
		}
		if err == nil {
			addr, err = serve(next)
		}
	}
	var top caller
	if err == nil {
		top, err = dial(addr)
	}
	if err != nil {
		closeAll()
		return chain{}, err
	}
	return chain{top: func(ctx context.Context, id string) error {
		ctx, cancel := context.WithTimeout(ctx, cfg.Budget)
		defer cancel()
		return top(ctx, id)
	}, close: closeAll}, nil
}

// checker is a hop of the gRPC chain: its Check calls check with the
// request id the call carries, and answers its error as it is (a status
// error keeps its code, so UNAVAILABLE from below is retried above).
type checker struct {
	healthpb.UnimplementedHealthServer
	check func(ctx context.Context, id string) error
}

func (c *checker) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	var id string
	if md, ok := metadata.FromIncomingContext(ctx); ok && len(md["x-request-id"]) > 0 {
		id = md["x-request-id"][0]
	}
	if err := c.check(ctx, id); err != nil {
		return nil, err
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}
