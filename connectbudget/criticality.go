package connectbudget

import (
	"context"
	"net/http"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// WithClassifier sets the function that gives a call its criticality
// ([budget.Criticality]) when no trusted Request-Criticality header does: at
// a public edge, whose policy trusts [wire.SourcesNone], it classifies every
// call (procedure is the registered procedure, as connect.Spec names it), and
// behind an edge it classifies the calls that arrive unclassified. Without a
// classifier such a call keeps a class other than the default that its
// context already carries (put there by code that runs before the
// interceptor, such as otelbudget's baggage propagator, which reads it under
// a trust rule of its own), and otherwise gets the policy's Criticality, the
// default class unless configured. A classifier, when set, decides over
// such a context's class. f runs on every such call before the handler, so
// it must be cheap and safe for concurrent use; a nil f removes the
// classifier. With enforcement off (a [edge.WithSwitch] holding nil) nothing is
// read and the context is left as it is.
//
// The class is put on the handler's context ([budget.CriticalityFrom]),
// where [budget.Op] admission ([edge.WithAdmission] and [WithMessageAdmission]
// included) and [budget.Queue] read it, so that under a shortage sheddable
// work is refused first. The client interceptor sends a context's class
// other than the default as the Request-Criticality header on every call,
// for the Connect, gRPC and gRPC-Web protocols alike, with or without a
// deadline: nothing native to those protocols carries the class.
func WithClassifier(f func(ctx context.Context, procedure string) budget.Criticality) edge.ServerOption {
	return serverOption(func(c *serverConfig) { c.classify = f })
}

// request is what the arrival steps need of a call, as every RPC adapter
// builds it ([edge.CallRequest]).
func (s *server) request(ctx context.Context, procedure string, header http.Header, now time.Time) edge.Request {
	return edge.CallRequest(ctx, procedure, wire.HTTPHeader(header), now, s.cfg.classify)
}
