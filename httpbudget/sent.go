package httpbudget

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// How the Transport classifies the errors it returns ([budget.SentOf]):
//
//   - a local refusal, and an error before any connection was obtained for
//     the request (a refused or failed dial, a DNS failure, the deadline
//     while dialing or waiting for a connection), is [budget.NotSent];
//   - an error once a connection was obtained (the request may have been
//     written, whole or in part: the deadline, a reset, a closed connection
//     before an answer) is [budget.MaybeExecuted], and so is any error the
//     Transport cannot place: it never calls "not sent" what may have run;
//   - an answer is [budget.Executed]: it is no error at all, except an
//     answer carrying Budget-Expired or, with a status of 400 or above,
//     Budget-No-Retry, whose error is marked Executed too (it is not
//     retried either way);
//   - an answer carrying Budget-No-Retry: shed, which this package's
//     servers stamp on a request refused on arrival (and which tells such
//     a 504 from a handler that ran out of time), is [budget.ServerRefused].
//
// Telling "no connection yet" from "connection obtained" takes an
// [httptrace.ClientTrace] on the request: four allocations, a copy of the
// request among them. The Transport pays it only for requests that are not
// idempotent by net/http's rule (GET, HEAD, OPTIONS or TRACE, or carrying an
// Idempotency-Key header): [budget.Retry] repeats idempotent ones whatever
// their classification, since their errors report Idempotent() true, so
// for them only an error that is itself a dial or DNS failure is NotSent.
// A request that may linger carries the trace in its exchange (two
// allocations, no copy), idempotent or not: at its caller's deadline, one
// that has no connection yet is aborted rather than left to linger. Its
// error stays MaybeExecuted, as for any abandoned exchange: the connection
// may have come between the check and the abort.

// sendError is an error the Transport returns, classified.
type sendError struct {
	err        error
	sent       budget.Sent
	idempotent bool
}

func (e *sendError) Error() string     { return e.err.Error() }
func (e *sendError) Unwrap() error     { return e.err }
func (e *sendError) Sent() budget.Sent { return e.sent }
func (e *sendError) Idempotent() bool  { return e.idempotent }

// Timeout forwards the wrapped error's, as url.Error and net.Error callers
// check it with a type assertion rather than errors.As.
func (e *sendError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.err, &t) && t.Timeout()
}

// sendTrace notes whether a connection was obtained for one request.
type sendTrace struct {
	trace   httptrace.ClientTrace
	gotConn atomic.Bool
}

// traced returns out with a trace that notes when a connection is obtained,
// for a request that is not idempotent; otherwise out and nil.
func traced(out *http.Request) (*http.Request, *sendTrace) {
	if idempotentRequest(out) {
		return out, nil
	}
	st := new(sendTrace)
	return out.WithContext(st.on(out.Context())), st
}

// on returns ctx with st's trace, which notes when a connection is obtained
// (and runs any trace ctx already carries).
func (st *sendTrace) on(ctx context.Context) context.Context {
	st.trace.GotConn = func(httptrace.GotConnInfo) { st.gotConn.Store(true) }
	return httptrace.WithClientTrace(ctx, &st.trace)
}

// classify returns err marked with how far the request out got through
// base; abandoned says the Transport stopped waiting while base still ran
// (a lingering exchange), so that the request may be written later still.
func classify(err error, out *http.Request, base http.RoundTripper, st *sendTrace, abandoned bool) error {
	if err == nil {
		return nil
	}
	s := budget.MaybeExecuted
	if !abandoned && (isDialError(err) || st != nil && !st.gotConn.Load() && isNetHTTP(base)) {
		s = budget.NotSent
	}
	return &sendError{err: err, sent: s, idempotent: idempotentRequest(out)}
}

// notSent marks err, a refusal before any network call, as not sent.
func notSent(err error, req *http.Request) error {
	return &sendError{err: err, sent: budget.NotSent, idempotent: idempotentRequest(req)}
}

// executed marks err, made from an answer, as executed.
func executed(err error, req *http.Request) error {
	return &sendError{err: err, sent: budget.Executed, idempotent: idempotentRequest(req)}
}

// isNetHTTP reports whether base is net/http's Transport, whose trace hooks
// run for every request: only then does a hook that never ran mean that no
// connection was obtained.
func isNetHTTP(base http.RoundTripper) bool {
	_, ok := base.(*http.Transport)
	return ok
}

// isDialError reports whether err is a failure to connect: no byte of the
// request can have left.
func isDialError(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) && op.Op == "dial" || errors.As(err, &dns)
}

// idempotentRequest reports whether req is idempotent by net/http's own rule for
// replaying requests: GET, HEAD, OPTIONS or TRACE, or any method with an
// Idempotency-Key (or X-Idempotency-Key) header.
func idempotentRequest(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return len(req.Header[wire.HeaderIdempotencyKey]) > 0 || len(req.Header["X-Idempotency-Key"]) > 0
}

// setIdempotencyKey writes the key ctx carries ([budget.WithIdempotencyKey])
// into h, the header of a request the Transport owns, unless the caller set
// one of its own.
func setIdempotencyKey(ctx context.Context, h http.Header) {
	k, ok := budget.IdempotencyKeyFrom(ctx)
	if !ok || len(h[wire.HeaderIdempotencyKey]) > 0 {
		return
	}
	if v, ok := wire.FormatIdempotencyKey(k); ok {
		h[wire.HeaderIdempotencyKey] = []string{v}
	}
}

// passThrough sends req, which has no deadline, through base with its class
// and idempotency key, and classifies its error.
func passThrough(base http.RoundTripper, req *http.Request) (*http.Response, error) {
	out := withCriticality(req)
	if k, ok := budget.IdempotencyKeyFrom(req.Context()); ok && k != "" && len(req.Header[wire.HeaderIdempotencyKey]) == 0 {
		if out == req {
			out = new(http.Request)
			*out = *req
			out.Header = req.Header.Clone()
			if out.Header == nil {
				out.Header = make(http.Header, 1)
			}
		}
		setIdempotencyKey(req.Context(), out.Header)
	}
	out, st := traced(out)
	resp, err := base.RoundTrip(out)
	return resp, classify(err, out, base, st, false)
}

// noRetrySent reports whether resp is a failed answer carrying
// Budget-No-Retry, and how far its request got: [budget.ServerRefused] for
// "shed", refused on arrival; [budget.Executed] for "retried" and for any
// value this package cannot read, which asks for no retry all the same.
func noRetrySent(resp *http.Response) (budget.Sent, bool) {
	vals := resp.Header[wire.HeaderBudgetNoRetry]
	if len(vals) == 0 || resp.StatusCode < 400 {
		return 0, false
	}
	if r, _, _ := wire.ParseBudgetNoRetry(vals); r == wire.NoRetryShed {
		return budget.ServerRefused, true
	}
	return budget.Executed, true
}

// noRetryAnswer is the error made from an answer carrying Budget-No-Retry.
// It matches [ErrNoRetry].
type noRetryAnswer struct {
	stage  string // the host or client stage, as the Transport names it
	status int
}

func (e *noRetryAnswer) Error() string {
	return "httpbudget: " + e.stage + " answered " + strconv.Itoa(e.status) + " with " + wire.HeaderBudgetNoRetry
}
func (e *noRetryAnswer) Unwrap() error { return ErrNoRetry }
