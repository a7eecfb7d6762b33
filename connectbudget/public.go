package connectbudget

import (
	"context"
	"errors"

	"connectrpc.com/connect"
	"github.com/timebudget/budget/edge"
)

// PublicError returns the error a Connect handler returns for err when its
// caller may be outside the service, as httpbudget.WriteError writes one
// for HTTP: the code [CodeOf] maps err to, with a generic message for it
// ("the request ran out of time" for DeadlineExceeded, "malformed deadline
// header" for InvalidArgument, "internal server error" for anything else,
// which becomes Internal). An error that already carries a
// [*connect.Error] of another code (NotFound, say) is the handler's own
// choice of answer and is returned as it is. A nil err gives nil.
//
// Use it where connect.NewError(CodeOf(ctx, err), err) would send the
// error's message: that message is for logs, and says too much to the
// public (a database driver's quotes the failed statement). Log err in
// full, then return PublicError(ctx, err). ctx is the handler's context.
func PublicError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	switch code := CodeOf(ctx, err); code {
	case connect.CodeDeadlineExceeded:
		return connect.NewError(code, errors.New(edge.PublicExpired))
	case connect.CodeInvalidArgument:
		if c, ok := connectCode(err); ok && c == code {
			return err
		}
		return connect.NewError(code, errors.New(edge.PublicMalformed))
	case connect.CodeUnknown, connect.CodeCanceled:
		return connect.NewError(connect.CodeInternal, errors.New(edge.PublicInternal))
	default:
		return err // a code the handler chose
	}
}
