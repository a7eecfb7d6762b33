package httpbudget

import (
	"errors"
	"net/http"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/internal/redact"
	"github.com/timebudget/budget/wire"
)

// WriteError writes the answer a client outside the service may see for a
// handler's error: the status [StatusOf] maps err to (by err alone: a
// cancellation is a 500), a generic one-line
// text for that status ("the request ran out of time" for 504, "malformed
// deadline header" for 400, "internal server error" otherwise), and, for a
// 504, a Budget-Expired header naming the stage of the [*budget.Error] in
// err's chain ("request" when there is none), so that a budget-aware caller
// does not retry. When err reports [budget.GaveUp] (a [budget.Retry] in the
// handler already retried its dependency and gave up, or the dependency
// asked not to retry), the answer also carries Budget-No-Retry: retried, so
// that callers do not multiply the retries made here: retries happen at the
// hop nearest the failure. A nil err is answered as an internal error: a handler
// calls WriteError only when something failed.
//
// Use it where http.Error(w, err.Error(), StatusOf(ctx, err)) would send the
// error's message: that message is for logs, and says too much to the
// public. A Transport's error quotes the whole upstream URL, query string
// included; a database driver's quotes the failed statement. Log err in
// full, then answer with WriteError. The stage in Budget-Expired loses any
// URL query string or user info ([budget.RedactError]); name stages with
// [edge.WithClientStage] when even a host should not show. Like http.Error, it
// does not end the handler, and the handler should write nothing more. It
// costs what http.Error does, plus one errors.As and a walk of err's chain.
func WriteError(w http.ResponseWriter, err error) {
	status := statusOf(err)
	text := edge.PublicInternal
	switch status {
	case http.StatusGatewayTimeout:
		text = edge.PublicExpired
		stage := "request"
		if be, ok := errors.AsType[*budget.Error](err); ok && be != nil && be.Stage != "" {
			stage = redact.String(be.Stage)
		}
		w.Header().Set(wire.HeaderBudgetExpired, wire.FormatBudgetExpired(stage))
	case http.StatusBadRequest:
		text = edge.PublicMalformed
	default:
		status = http.StatusInternalServerError
	}
	if budget.GaveUp(err) {
		w.Header()[wire.HeaderBudgetNoRetry] = []string{wire.NoRetryRetried.String()}
	}
	http.Error(w, text, status)
}
