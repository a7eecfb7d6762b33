package httpbudget

import (
	"net/http"

	"github.com/timebudget/budget/edge"
)

// NewMiddleware returns the middleware form of NewHandler, for routers that
// compose func(http.Handler) http.Handler values (chi's Use, gorilla/mux's
// Use, alice chains), as otelhttp.NewMiddleware does beside
// otelhttp.NewHandler. Applied to next, it returns NewHandler(next, opts...):
// the same inbound policy, refusals and ledger, with the options evaluated
// once per call of the returned function. The middleware is safe for
// concurrent use; like NewHandler, it panics if next is nil, as http.Handle
// does.
func NewMiddleware(opts ...edge.ServerOption) func(next http.Handler) http.Handler {
	return func(next http.Handler) http.Handler { return NewHandler(next, opts...) }
}
