package httpbudget

import (
	"net/http"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// WithClassifier sets the function that gives a request its criticality when
// no trusted Request-Criticality header does: at a public edge, whose policy
// trusts [wire.SourcesNone], it classifies every request (by route, method or
// caller), and behind an edge it classifies the requests that arrive
// unclassified. Without a classifier such a request keeps a class other than
// the default that its context already carries (put there by code the
// server runs before this handler, such as otelbudget's baggage propagator,
// which reads it under a trust rule of its own), and otherwise gets the
// policy's Criticality, the default class unless configured. A classifier,
// when set, decides over such a context's class. f runs on every such
// request before the handler, so it must be cheap and safe for concurrent
// use; a nil f removes the classifier.
//
// The class is put on the handler's context ([budget.CriticalityFrom]), where
// [budget.Op] admission and [budget.Queue] read it and the [Transport]
// forwards it. Under a shortage they refuse sheddable work first, then
// default, so that critical requests keep their deadlines.
func WithClassifier(f func(*http.Request) budget.Criticality) edge.ServerOption {
	return handlerOption(func(c *handlerConfig) { c.classify = f })
}

// request is what the arrival steps need of r.
func (h *handler) request(r *http.Request, now time.Time) edge.Request {
	req := edge.Request{Header: wire.HTTPHeader(r.Header), Now: now}
	if f := h.cfg.classify; f != nil {
		req.Criticality, req.Classified = f(r), true
	}
	return req
}

// setCriticality writes the class ctx carries into h, the header of a request
// the Transport owns, and the probe mark when ctx is marked as a probe; the
// default class is not sent. It does not allocate.
var setCriticality = edge.StampHTTP

// withCriticality returns req, or a copy carrying the class of its context
// when that is not the default and its probe mark, for a request sent
// without a deadline.
func withCriticality(req *http.Request) *http.Request {
	_, class := edge.CriticalityValue(req.Context())
	if _, probe := edge.ProbeValue(req.Context()); !class && !probe {
		return req
	}
	out := new(http.Request)
	*out = *req
	out.Header = make(http.Header, len(req.Header)+1)
	for k, v := range req.Header {
		out.Header[k] = v
	}
	setCriticality(req.Context(), out.Header)
	return out
}
