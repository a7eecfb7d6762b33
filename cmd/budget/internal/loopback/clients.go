package loopback

import (
	"github.com/timebudget/budget/edge"
	"net/http"
	"time"

	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/httpbudget"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// This file says how the edge's calls leave it: the clients and transports
// of each pattern.

// Wiring says how the edge's calls travel in one pattern. Patterns without a
// budget use the transports as most code does today: a plain http.Client and
// a plain gRPC channel (which still sends grpc-timeout when the call's
// context has a deadline, as every gRPC client does). Patterns with a budget
// send the time left on every hop, so the dependencies know the deadline and
// hand it to their work.
//
// The dependencies' servers are the same in every pattern: each applies the
// inbound policy to whatever its caller sent (see serverWiring).
type Wiring struct {
	BudgetAware bool
}

// HTTPClient returns the client of the HTTP hop named stage. The caller
// closes base's idle connections when the run ends.
func (w Wiring) HTTPClient(base *http.Transport, stage string) *http.Client {
	if !w.BudgetAware {
		return &http.Client{Transport: base}
	}
	return &http.Client{Transport: budgetTransport(base, stage)}
}

// GrpcDialOptions returns the options of the edge's gRPC channels.
func (w Wiring) GrpcDialOptions() []grpc.DialOption {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if w.BudgetAware {
		opts = append(opts, budgetGRPCClientOptions()...)
	}
	return opts
}

// NewHTTPTransport returns a transport for loopback traffic with enough idle
// connections that a run does not churn through ephemeral ports.
func NewHTTPTransport() *http.Transport {
	return &http.Transport{
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
	}
}

// NewH2CTransport returns a transport that speaks HTTP/2 without TLS: one
// pooled connection carries many requests, and a canceled request resets
// its stream rather than closing the connection.
func NewH2CTransport() *http.Transport {
	t := NewHTTPTransport()
	t.Protocols = new(http.Protocols)
	t.Protocols.SetUnencryptedHTTP2(true)
	return t
}

// budgetTransport returns a RoundTripper that sends the time left before the
// request context's deadline (Request-Timeout-Ms and Request-Deadline) and
// refuses locally, without a network call, when nothing useful is left.
// stage names the hop in refusals and the ledger.
func budgetTransport(base http.RoundTripper, stage string) http.RoundTripper {
	return httpbudget.NewTransport(base, edge.WithClientStage(stage))
}

// budgetGRPCClientOptions returns the dial options that make a gRPC channel
// budget-aware: a call with too little time left is refused locally, and an
// expiry matches context.DeadlineExceeded. grpc-go itself sends the time
// left as grpc-timeout.
func budgetGRPCClientOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithUnaryInterceptor(grpcbudget.UnaryClientInterceptor())}
}
