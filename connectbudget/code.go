package connectbudget

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// CodeOf maps an error to the Connect code a server should answer with, or a
// client should report. It is the one place this package maps errors to
// codes:
//
//   - nil is 0, which connect-go gives no name: success;
//   - a malformed deadline value (matching [wire.ErrMalformed]) is
//     InvalidArgument;
//   - an expiry (matching [context.DeadlineExceeded]) and a refusal for lack
//     of time (matching [budget.ErrInsufficient] or [wire.ErrShed], here or
//     upstream) are DeadlineExceeded;
//   - an error carrying a [*connect.Error] keeps its code, except as below;
//   - [context.Canceled] is Canceled, and anything else is Unknown.
//
// A Canceled that comes after ctx's deadline has passed is reported as
// DeadlineExceeded: when a deadline fires, the side that notices first
// cancels the stream, and the other side often sees only the cancellation;
// the cause was the deadline. ctx is the call's context: the handler's on a
// server, the caller's on a client.
//
// A refusal is DeadlineExceeded, not ResourceExhausted or Unavailable, as in
// grpcbudget: the resource that ran out is the caller's time, and retry
// policies commonly retry ResourceExhausted and Unavailable, which would
// start again with even less time. The message tells a refusal from an
// expiry for a reader ("not started: too little time left").
func CodeOf(ctx context.Context, err error) connect.Code {
	if err == nil {
		return 0
	}
	code := codeOf(err)
	if code == connect.CodeCanceled && edge.DeadlinePassed(ctx) {
		return connect.CodeDeadlineExceeded
	}
	return code
}

func codeOf(err error) connect.Code {
	switch {
	case errors.Is(err, wire.ErrMalformed):
		return connect.CodeInvalidArgument
	case edge.IsExpiry(err):
		return connect.CodeDeadlineExceeded
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Code()
	}
	if errors.Is(err, context.Canceled) {
		return connect.CodeCanceled
	}
	return connect.CodeUnknown
}

// connectCode returns the code of the first *connect.Error in err's tree.
func connectCode(err error) (connect.Code, bool) {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Code(), true
	}
	return 0, false
}

// toConnect returns err as an error carrying the code [CodeOf] gives it.
// Errors whose *connect.Error already has that code are returned unchanged.
func toConnect(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	code := CodeOf(ctx, err)
	if c, ok := connectCode(err); ok && c == code {
		return err
	}
	if code == connect.CodeDeadlineExceeded && codeOf(err) == connect.CodeCanceled {
		return connect.NewError(code, &expiry{err: err})
	}
	return connect.NewError(code, err)
}

// expiry reports an error that ended a call as an expiry of the call's
// deadline: it keeps the *connect.Error it wraps reachable (with its
// metadata and details) and also matches [context.DeadlineExceeded], as an
// expiry must, which a DeadlineExceeded that came over the wire does not.
type expiry struct{ err error }

func (e *expiry) Error() string { return e.err.Error() }

func (e *expiry) Unwrap() error { return e.err }

// Is reports whether target is context.DeadlineExceeded.
func (e *expiry) Is(target error) bool { return target == context.DeadlineExceeded }
