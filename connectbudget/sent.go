package connectbudget

import (
	"context"
	"errors"
	"net"
	"net/http"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// How the client interceptor classifies the errors it returns
// ([budget.SentOf]), unary and streaming alike, so that [budget.Retry] and
// [budget.Hedge] do not repeat a call that may have run:
//
//   - a refusal of the interceptor's own (too little time left, an op's
//     admission), and a failure to connect (a refused or failed dial, a
//     DNS failure: no byte of the request left) is [budget.NotSent];
//   - an error the server sent ([connect.IsWireError]) carrying the
//     Budget-No-Retry header ([wire.HeaderBudgetNoRetry]) is
//     [budget.DoNotRetry]'s: [budget.ServerRefused] for "shed" (a server's
//     interceptor refused the call on arrival), [budget.Executed] for
//     "retried" or any other value;
//   - any other error the server sent is [budget.Executed];
//   - anything else (the deadline, a reset or closed connection, an answer
//     connect-go could not read) is [budget.MaybeExecuted]: the interceptor
//     never calls "not sent" what may have run.
//
// An error that an HTTP client's transport already classified (httpbudget's
// Transport does) keeps that classification. What it cannot tell: whether a
// connection reused from the pool failed before or after the request was
// written; both read as MaybeExecuted.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) && connect.IsWireError(ce) {
		if v := ce.Meta()[noRetryKey]; len(v) > 0 {
			s := budget.Executed
			if r, _, _ := wire.ParseBudgetNoRetry(v); r == wire.NoRetryShed {
				s = budget.ServerRefused
			}
			return budget.DoNotRetry(err, s)
		}
		return budget.MarkSent(err, budget.Executed)
	}
	if _, ok := budget.SentOf(err); ok {
		return err
	}
	if isDialError(err) {
		return budget.MarkSent(err, budget.NotSent)
	}
	return budget.MarkSent(err, budget.MaybeExecuted)
}

// isDialError reports whether err is a failure to connect: no byte of the
// request can have left.
func isDialError(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) && op.Op == "dial" || errors.As(err, &dns)
}

// noRetryKey is the canonical form of [wire.HeaderBudgetNoRetry].
var noRetryKey = http.CanonicalHeaderKey(wire.HeaderBudgetNoRetry)

// idempotencyKeyKey is the canonical form of [wire.HeaderIdempotencyKey].
var idempotencyKeyKey = http.CanonicalHeaderKey(wire.HeaderIdempotencyKey)

// setIdempotencyKey writes the idempotency key ctx carries
// ([budget.WithIdempotencyKey]) into header as Idempotency-Key, quoted as
// [wire.FormatIdempotencyKey] writes it. The context's key replaces one the
// header holds: a unary request's header may be reused across calls, and
// the key of an earlier call must not go with a later one.
func setIdempotencyKey(ctx context.Context, header http.Header) {
	k, ok := budget.IdempotencyKeyFrom(ctx)
	if !ok {
		return
	}
	if v, ok := wire.FormatIdempotencyKey(k); ok {
		header[idempotencyKeyKey] = []string{v}
	}
}

// shed marks err, the refusal of a call on arrival, with the no-retry
// marker "Budget-No-Retry: shed", which the server sends with the error: a
// refusal on arrival means the server is short of time or capacity, and a
// retry from the caller's side would spend the caller's budget on the same
// answer.
func shed(err *connect.Error) *connect.Error {
	err.Meta()[noRetryKey] = []string{wire.NoRetryShed.String()}
	return err
}

// shedError is [shed] for an error made by toConnect.
func shedError(err error) error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		shed(ce)
	}
	return err
}

// gaveUp returns err, made by toConnect from a handler's error, with the
// marker "Budget-No-Retry: retried" when the handler gave up after its own
// retries ([budget.GaveUp]), so that the caller does not retry in turn:
// retries happen at the hop nearest the failure. An error that came from
// another server is wrapped first, since connect-go strips the metadata of
// such errors before answering.
func gaveUp(err error) error {
	if !budget.GaveUp(err) {
		return err
	}
	ce, ok := err.(*connect.Error)
	if !ok || connect.IsWireError(ce) {
		ce = connect.NewError(CodeOf(context.Background(), err), err)
	}
	ce.Meta()[noRetryKey] = []string{wire.NoRetryRetried.String()}
	return ce
}
