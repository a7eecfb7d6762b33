package connectbudget_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/wire"
)

// TestPublicError: the code CodeOf gives, with a message that quotes
// nothing of the error, and a status the handler chose kept as it is.
func TestPublicError(t *testing.T) {
	t.Parallel()
	secret := errors.New("pq: SELECT secret FROM users")
	own := connect.NewError(connect.CodeNotFound, errors.New("no such user"))
	for _, tc := range []struct {
		err  error
		code connect.Code
		msg  string
	}{
		{fmt.Errorf("lookup: %w: %w", secret, context.DeadlineExceeded), connect.CodeDeadlineExceeded, "the request ran out of time"},
		{fmt.Errorf("%w: %w", secret, budget.ErrInsufficient), connect.CodeDeadlineExceeded, "the request ran out of time"},
		{&wire.ParseError{Header: "Request-Timeout-Ms", Value: "x"}, connect.CodeInvalidArgument, "malformed deadline header"},
		{secret, connect.CodeInternal, "internal server error"},
		{own, connect.CodeNotFound, "no such user"},
	} {
		var got *connect.Error
		if !errors.As(connectbudget.PublicError(context.Background(), tc.err), &got) || got.Code() != tc.code || got.Message() != tc.msg {
			t.Errorf("PublicError(%v) = %v, want %v %q", tc.err, got, tc.code, tc.msg)
		}
	}
	if connectbudget.PublicError(context.Background(), nil) != nil {
		t.Error("PublicError(nil) is not nil")
	}
}
