package httpbudget

import (
	"context"
	"net/http"

	"github.com/timebudget/budget"
)

// WithAdmission runs the handler of every admitted request as one attempt of
// op ([budget.Op.Do]): the op measures the handler's latency, refuses a
// request its measurements say cannot finish in the time it has, and, with
// its Limit set, bounds the handlers running at once. It does all of this by
// the request's criticality (see [WithClassifier]), so under a shortage it
// sheds sheddable requests first and keeps the top of its Limit for critical
// ones. A refused request never reaches the handler: it is answered as one
// refused on arrival is, 504 with a Budget-Expired header, which this
// package's Transport does not retry, so that a shed request does not come
// back at once as more load. The default is no admission; a nil op removes
// it.
func WithAdmission(op *budget.Op) ServerOption {
	return handlerOption(func(c *handlerConfig) { c.op = op })
}

// serve runs the handler with ctx, through the op when one is configured.
func (h *handler) serve(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	op := h.cfg.op
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
		h.answer(w, r, StatusOf(ctx, err), err.Error())
	}
}
