package httpbudget

import (
	"context"
	"net/http"

	"github.com/timebudget/budget/edge"
)

// serve runs the handler with ctx, through the op when one is configured.
func (h *handler) serve(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	op := edge.OpOf(h.cfg.Ops, h.cfg.Stage)
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
