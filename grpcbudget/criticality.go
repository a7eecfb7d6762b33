package grpcbudget

import (
	"context"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// criticalityKey is [wire.HeaderRequestCriticality] as gRPC metadata spells it.
const criticalityKey = "request-criticality"

// WithClassifier sets the function that gives a call its criticality when no
// trusted request-criticality metadata does: at a public edge, whose policy
// trusts [wire.SourcesNone], it classifies every call (fullMethod is the
// registered method, never a name the client chose), and behind an edge it
// classifies the calls that arrive unclassified. Without a classifier such a
// call keeps a class other than the default that its context already carries
// (put there by code that runs before this interceptor, such as a stats
// handler running otelbudget's baggage propagator, which reads it under a
// trust rule of its own), and otherwise gets the policy's Criticality, the
// default class unless configured. A classifier, when set, decides over such
// a context's class. f runs on every such call before the handler, so it
// must be cheap and safe for concurrent use; a nil f removes the classifier.
//
// The class is put on the handler's context ([budget.CriticalityFrom]), where
// [budget.Op] admission ([edge.WithAdmission] included) and [budget.Queue] read
// it. The client interceptors send a context's class other than the default
// as request-criticality metadata on every call, whether or not
// [WithBudgetMetadata] is set: grpc-timeout carries the deadline, but
// nothing native carries the class.
func WithClassifier(f func(ctx context.Context, fullMethod string) budget.Criticality) edge.ServerOption {
	return serverOption(func(c *serverConfig) { c.classify = f })
}

// request is what the arrival steps need of a call, as every RPC adapter
// builds it ([edge.CallRequest]).
func (s *server) request(ctx context.Context, method string, md metadata.MD, now time.Time) edge.Request {
	return edge.CallRequest(ctx, method, wire.Metadata(md), now, s.cfg.classify)
}

// probeKey is [wire.HeaderBudgetProbe] as gRPC metadata spells it.
const probeKey = "budget-probe"

// withCriticality adds the class ctx carries to its outgoing metadata, unless
// it is the default class, and the probe mark when ctx is marked as a probe.
func withCriticality(ctx context.Context) context.Context {
	if v, ok := edge.CriticalityValue(ctx); ok {
		ctx = metadata.AppendToOutgoingContext(ctx, criticalityKey, v)
	}
	if v, ok := edge.ProbeValue(ctx); ok {
		ctx = metadata.AppendToOutgoingContext(ctx, probeKey, v)
	}
	return ctx
}
