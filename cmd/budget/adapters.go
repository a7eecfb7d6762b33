package main

import (
	"time"

	"net/http"

	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
	"google.golang.org/grpc"
)

// This file is where the demo meets the budget adapters for HTTP and gRPC.

// budgetTransport returns a RoundTripper that sends the time left before the
// request context's deadline (Request-Timeout-Ms and Request-Deadline) and
// refuses locally, without a network call, when nothing useful is left.
// stage names the hop in refusals and the ledger.
func budgetTransport(base http.RoundTripper, stage string) http.RoundTripper {
	return httpbudget.NewTransport(base, httpbudget.WithClientStage(stage))
}

// budgetGRPCClientOptions returns the dial options that make a gRPC channel
// budget-aware: a call with too little time left is refused locally, and an
// expiry matches context.DeadlineExceeded. grpc-go itself sends the time
// left as grpc-timeout.
func budgetGRPCClientOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithUnaryInterceptor(grpcbudget.UnaryClientInterceptor())}
}

// serverHTTP wraps a dependency's HTTP handler with its inbound policy: the
// request's deadline is what the caller sent, and there is none when it sent
// nothing, so the same server serves callers with and without budgets.
func serverHTTP(h http.Handler, stage string) http.Handler {
	return httpbudget.NewHandler(h, httpbudget.WithPolicy(&wire.Policy{}), httpbudget.WithStage(stage))
}

// edgeHTTP wraps the edge's handler with the policy of a service whose
// latency is promised: whatever the client sends, every request starts a
// fresh budget of b.
func edgeHTTP(h http.Handler, b time.Duration) http.Handler {
	return httpbudget.NewHandler(h, httpbudget.WithPolicy(&wire.Policy{Trust: wire.SourcesNone, Default: b}),
		httpbudget.WithStage("edge"))
}

// serverGRPCOptions returns the options of a dependency's gRPC server: the
// same inbound policy as its HTTP peers, applied to grpc-timeout and the
// budget metadata, whatever the caller sent.
func serverGRPCOptions(stage string) []grpc.ServerOption {
	return []grpc.ServerOption{grpc.UnaryInterceptor(grpcbudget.UnaryServerInterceptor(
		grpcbudget.WithPolicy(&wire.Policy{}), grpcbudget.WithStage(stage)))}
}
