package httpbudget

import (
	"context"
	"net/http"

	"github.com/timebudget/budget"
)

// WithAdmission gives the handler an [budget.Op]: lookup returns the op of
// the handler's stage ([WithStage]; "request" by default), or nil for none.
// It takes the argument grpcbudget's and connectbudget's WithAdmission take,
// whose lookups get a method's name; a handler has one stage, so one op
// serves it all: WithAdmission(func(string) *budget.Op { return op }), or
// [Ops] for handlers that share a lookup. The default is no admission; a nil
// lookup removes it.
//
// The handler of every admitted request runs as one attempt of the op
// ([budget.Op.Do]): the op measures the handler's latency, refuses a request
// its measurements say cannot finish in the time it has, and, with its Limit
// set, bounds the handlers running at once. It does all of this by the
// request's criticality (see [WithClassifier]), so under a shortage it sheds
// sheddable requests first and keeps the top of its Limit for critical ones.
// A refused request never reaches the handler: it is answered as one refused
// on arrival is, 504 with a Budget-Expired header and Budget-No-Retry: shed,
// which this package's Transport does not retry, so that a shed request
// does not come back at once as more load.
func WithAdmission(lookup func(stage string) *budget.Op) ServerOption {
	return handlerOption(func(c *handlerConfig) { c.ops = lookup })
}

// Ops maps stages to their ops. Its Op method is a lookup for
// [WithAdmission]: WithAdmission(httpbudget.Ops{"checkout": checkoutOp}.Op).
type Ops map[string]*budget.Op

// Op returns the op of stage, or nil.
func (o Ops) Op(stage string) *budget.Op { return o[stage] }

// serve runs the handler with ctx, through the op when one is configured.
func (h *handler) serve(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var op *budget.Op
	if h.cfg.ops != nil {
		op = h.cfg.ops(h.cfg.stage)
	}
	if op == nil {
		if ctx != r.Context() {
			r = r.WithContext(ctx)
		}
		h.next.ServeHTTP(w, r)
		return
	}
	ran := false
	err := op.Do(ctx, func(actx context.Context) error {
		ran = true
		h.next.ServeHTTP(w, r.WithContext(actx))
		return nil
	})
	if !ran && err != nil {
		stampShed(w)
		h.answer(w, r, StatusOf(ctx, err), err.Error())
	}
}
