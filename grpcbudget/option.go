package grpcbudget

import (
	"context"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
)

type serverConfig struct {
	edge.ServerSettings
	classify func(ctx context.Context, fullMethod string) budget.Criticality // see WithClassifier
	stream   streamConfig
}

type clientConfig struct {
	edge.ClientSettings
	metadata bool
	stream   streamConfig
}

type (
	serverOption = edge.ServerFunc[serverConfig]
	clientOption = edge.ClientFunc[clientConfig]
	bothOption   = edge.Both[serverConfig, clientConfig]
)

// WithBudgetMetadata also sends this library's Request-Timeout-Ms and
// Request-Deadline (and, inside a [budget.Retry] loop, the attempt number as
// Request-Attempt) with every call that has a deadline, beside grpc-go's own
// grpc-timeout. The relative value survives a proxy that drops grpc-timeout;
// the absolute one lets the callee charge the call's transit to the budget.
// The default is off: grpc-timeout alone carries the budget, and the two
// entries cost four allocations per call.
func WithBudgetMetadata() edge.ClientOption {
	return clientOption(func(c *clientConfig) { c.metadata = true })
}

// stageOf is the stage of a call to method, named as the server side names
// its stages ([edge.Named]).
func (c *clientConfig) stageOf(method string) string { return edge.Named(c.Stage, method) }
