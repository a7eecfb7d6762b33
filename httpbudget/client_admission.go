package httpbudget

import (
	"context"
	"net/http"

	"github.com/timebudget/budget"
)

// admitted sends req as one attempt of op, the op [edge.WithAdmission] gives
// the request's stage ([budget.Op.Do]): the op decides before anything is
// sent, by the request's time left, class and probe mark, and with its Limit
// set bounds the requests in flight; it learns from the time to the answer's
// header, and the attempt goes to the request's ledger. A request the op
// refuses makes no network call: its error is the op's refusal, marked as
// not sent. The op's Cap does not bound the request: the answer's body
// outlives the exchange the op measures, and a deadline on the exchange
// would cut the body short.
func (t *Transport) admitted(op *budget.Op, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var resp *http.Response
	sent := false
	err := op.Do(ctx, func(actx context.Context) error {
		sent = true
		out := req
		if budget.IsProbe(actx) && !budget.IsProbe(ctx) {
			out = req.WithContext(budget.WithProbe(ctx)) // the op admitted it as a probe: say so downstream
		}
		var err error
		resp, err = t.roundTrip(out)
		return err
	})
	if !sent {
		if req.Body != nil {
			_ = req.Body.Close() // as a RoundTripper must, even on error
		}
		return nil, notSent(err, req)
	}
	if err != nil && resp != nil {
		_ = resp.Body.Close() // the op turned an answer it saw arrive too late into an expiry
		resp = nil
	}
	return resp, err
}
