package connectbudget_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/wire"
)

func TestCodeOf(t *testing.T) {
	t.Parallel()
	live, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	cases := []struct {
		ctx  context.Context
		err  error
		want connect.Code
	}{
		{live, nil, 0},
		{live, &wire.ParseError{Header: "Request-Timeout-Ms"}, connect.CodeInvalidArgument},
		{live, context.DeadlineExceeded, connect.CodeDeadlineExceeded},
		{live, wire.ErrExpired, connect.CodeDeadlineExceeded},
		{live, wire.ErrShed, connect.CodeDeadlineExceeded},
		{live, budget.ErrInsufficient, connect.CodeDeadlineExceeded},
		{live, &budget.Error{Outcome: budget.OutcomeInsufficient}, connect.CodeDeadlineExceeded},
		{live, fmt.Errorf("wrapped: %w", &budget.Error{Outcome: budget.OutcomeShed}), connect.CodeDeadlineExceeded},
		{live, connect.NewError(connect.CodeNotFound, nil), connect.CodeNotFound},
		{live, fmt.Errorf("wrapped: %w", connect.NewError(connect.CodeUnavailable, nil)), connect.CodeUnavailable},
		{live, context.Canceled, connect.CodeCanceled},
		{live, connect.NewError(connect.CodeCanceled, nil), connect.CodeCanceled},
		{past, context.Canceled, connect.CodeDeadlineExceeded},
		{past, connect.NewError(connect.CodeCanceled, nil), connect.CodeDeadlineExceeded},
		{context.Background(), context.Canceled, connect.CodeCanceled},
		{live, errors.New("boom"), connect.CodeUnknown},
		{past, errors.New("boom"), connect.CodeUnknown},
		{live, connectbudget.ErrIdle, connect.CodeUnknown}, // the sentinel alone is no expiry
	}
	for _, tc := range cases {
		if got := connectbudget.CodeOf(tc.ctx, tc.err); got != tc.want {
			t.Errorf("CodeOf(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
