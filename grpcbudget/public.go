package grpcbudget

import (
	"context"

	"github.com/timebudget/budget/edge"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// PublicError returns the error a gRPC handler returns for err when its
// caller may be outside the service, as httpbudget.WriteError writes one
// for HTTP: the code [CodeOf] maps err to, with a generic message for it
// ("the request ran out of time" for DEADLINE_EXCEEDED, "malformed deadline
// header" for INVALID_ARGUMENT, "internal server error" for anything else,
// which becomes INTERNAL). An error that already carries a gRPC status of
// another code (NOT_FOUND, say) is the handler's own choice of answer and
// is returned as it is. A nil err gives nil.
//
// Use it where status.Error(CodeOf(ctx, err), err.Error()) would send the
// error's message: that message is for logs, and says too much to the
// public (a database driver's quotes the failed statement). Log err in
// full, then return PublicError(ctx, err). ctx is the handler's context.
func PublicError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	switch code := CodeOf(ctx, err); code {
	case codes.DeadlineExceeded:
		return status.Error(code, edge.PublicExpired)
	case codes.InvalidArgument:
		if c, ok := statusCode(err); ok && c == code {
			return err
		}
		return status.Error(code, edge.PublicMalformed)
	case codes.Unknown, codes.Canceled:
		return status.Error(codes.Internal, edge.PublicInternal)
	default:
		return err // a status the handler chose
	}
}
