package grpcbudget

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// CodeOf maps an error to the gRPC status code a server should answer with, or a
// client should report. It is the one place this package maps errors to codes:
//
//   - nil is OK;
//   - a malformed deadline value (matching [wire.ErrMalformed]) is
//     INVALID_ARGUMENT;
//   - an expiry (matching [context.DeadlineExceeded]) and a refusal for lack
//     of time (matching [budget.ErrInsufficient] or [wire.ErrShed], here or
//     upstream) are DEADLINE_EXCEEDED;
//   - an error carrying a gRPC status keeps its code, except as below;
//   - [context.Canceled] is CANCELLED, and anything else is UNKNOWN.
//
// A CANCELLED that comes after ctx's deadline has passed is reported as
// DEADLINE_EXCEEDED. When a deadline fires, the side that notices first
// cancels the stream, and the other side often sees only the cancellation (a
// reset stream, a handler returning ctx.Err() of a context canceled from
// outside, a proxy's CANCELLED); the cause was the deadline, and reporting it
// as such keeps dashboards and retry decisions right. ctx is the call's
// context: the handler's on a server, the caller's on a client.
//
// Why DEADLINE_EXCEEDED for a refusal, not RESOURCE_EXHAUSTED: the resource
// that ran out is the caller's time, and that is what DEADLINE_EXCEEDED means
// to every gRPC client. RESOURCE_EXHAUSTED means "overloaded, maybe try again
// later", and retry policies and load balancers commonly retry it; a retry
// would start with even less time and be refused again, or worse, be served
// after the caller left. The status message tells the two apart for a
// reader ("not started: too little time left").
//
// CodeOf does not allocate for errors of this module, the budget package or
// grpc-go's status package.
func CodeOf(ctx context.Context, err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	code := codeOf(err)
	if code == codes.Canceled && edge.DeadlinePassed(ctx) {
		return codes.DeadlineExceeded
	}
	return code
}

func codeOf(err error) codes.Code {
	if e, ok := err.(*codedError); ok {
		return e.code
	}
	switch {
	case errors.Is(err, wire.ErrMalformed):
		return codes.InvalidArgument
	case edge.IsExpiry(err):
		return codes.DeadlineExceeded
	}
	if code, ok := statusCode(err); ok {
		return code
	}
	if errors.Is(err, context.Canceled) {
		return codes.Canceled
	}
	return codes.Unknown
}

// statusCode returns the code of the first error in err's tree that carries
// a gRPC status, as errors.As would find it, without errors.As's allocation.
func statusCode(err error) (codes.Code, bool) {
	for err != nil {
		switch e := err.(type) {
		case *codedError:
			return e.code, true
		case *sentError:
			err = e.err
		case interface{ GRPCStatus() *status.Status }:
			return e.GRPCStatus().Code(), true
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, err := range e.Unwrap() {
				if code, ok := statusCode(err); ok {
					return code, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}

// codedError is an error with a gRPC status code that keeps the error it
// describes reachable with errors.Is and errors.As: a refusal is at once a
// DEADLINE_EXCEEDED status for gRPC code and a [*budget.Error] matching
// [budget.ErrInsufficient] for code that knows budgets.
type codedError struct {
	code codes.Code
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }

func (e *codedError) Unwrap() error { return e.err }

// GRPCStatus returns the status gRPC sends and status.FromError reports.
func (e *codedError) GRPCStatus() *status.Status { return status.New(e.code, e.err.Error()) }

// expiry reports an error that ended a call as an expiry of the call's
// deadline: a DEADLINE_EXCEEDED status, with the original message, that also
// matches [context.DeadlineExceeded], as an actual expiry must. It wraps
// grpc-go's DEADLINE_EXCEEDED statuses (which match no context error) and
// cancellations that came after the deadline.
type expiry struct {
	err error
	st  *status.Status
}

func newExpiry(err error) *expiry {
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if gs, ok := e.(interface{ GRPCStatus() *status.Status }); ok {
			msg = gs.GRPCStatus().Message()
			break
		}
	}
	return &expiry{err: err, st: status.New(codes.DeadlineExceeded, msg)}
}

func (e *expiry) Error() string { return e.st.Err().Error() }

func (e *expiry) Unwrap() error { return e.err }

// GRPCStatus returns the status gRPC sends and status.FromError reports.
func (e *expiry) GRPCStatus() *status.Status { return e.st }

// Is reports whether target is context.DeadlineExceeded.
func (e *expiry) Is(target error) bool { return target == context.DeadlineExceeded }

// toStatus returns err as an error carrying the status code [CodeOf] gives it.
// Errors that already carry that code are returned unchanged; a cancellation
// reported as DEADLINE_EXCEEDED becomes an [expiry].
func toStatus(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	code := CodeOf(ctx, err)
	if c, ok := statusCode(err); ok && c == code {
		return err
	}
	if code == codes.DeadlineExceeded && codeOf(err) == codes.Canceled {
		return newExpiry(err)
	}
	return &codedError{code: code, err: err}
}
