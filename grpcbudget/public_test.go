package grpcbudget_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

// TestPublicError: the code CodeOf gives, with a message that quotes
// nothing of the error, and a status the handler chose kept as it is.
func TestPublicError(t *testing.T) {
	t.Parallel()
	secret := errors.New("pq: SELECT secret FROM users")
	own := status.Error(codes.NotFound, "no such user")
	for _, tc := range []struct {
		err  error
		code codes.Code
		msg  string
	}{
		{fmt.Errorf("lookup: %w: %w", secret, context.DeadlineExceeded), codes.DeadlineExceeded, "the request ran out of time"},
		{fmt.Errorf("%w: %w", secret, budget.ErrInsufficient), codes.DeadlineExceeded, "the request ran out of time"},
		{&wire.ParseError{Header: "Request-Timeout-Ms", Value: "x"}, codes.InvalidArgument, "malformed deadline header"},
		{secret, codes.Internal, "internal server error"},
		{own, codes.NotFound, "no such user"},
	} {
		got := status.Convert(grpcbudget.PublicError(context.Background(), tc.err))
		if got.Code() != tc.code || got.Message() != tc.msg {
			t.Errorf("PublicError(%v) = %v %q, want %v %q", tc.err, got.Code(), got.Message(), tc.code, tc.msg)
		}
	}
	if grpcbudget.PublicError(context.Background(), nil) != nil {
		t.Error("PublicError(nil) is not nil")
	}
}
