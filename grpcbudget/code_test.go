package grpcbudget_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

func TestCode(t *testing.T) {
	t.Parallel()
	live, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	cases := []struct {
		ctx  context.Context
		err  error
		want codes.Code
	}{
		{live, nil, codes.OK},
		{live, &wire.ParseError{Header: "Request-Timeout-Ms"}, codes.InvalidArgument},
		{live, context.DeadlineExceeded, codes.DeadlineExceeded},
		{live, wire.ErrExpired, codes.DeadlineExceeded},
		{live, wire.ErrShed, codes.DeadlineExceeded},
		{live, budget.ErrInsufficient, codes.DeadlineExceeded},
		{live, &budget.Error{Outcome: budget.OutcomeInsufficient}, codes.DeadlineExceeded},
		{live, &budget.Error{Outcome: budget.OutcomeExpired}, codes.DeadlineExceeded},
		{live, fmt.Errorf("wrapped: %w", &budget.Error{Outcome: budget.OutcomeShed}), codes.DeadlineExceeded},
		{live, status.Error(codes.NotFound, "x"), codes.NotFound},
		{live, fmt.Errorf("wrapped: %w", status.Error(codes.Unavailable, "x")), codes.Unavailable},
		{live, context.Canceled, codes.Canceled},
		{live, status.Error(codes.Canceled, "x"), codes.Canceled},
		{past, context.Canceled, codes.DeadlineExceeded},
		{past, status.Error(codes.Canceled, "x"), codes.DeadlineExceeded},
		{context.Background(), context.Canceled, codes.Canceled},
		{live, errors.New("boom"), codes.Unknown},
		{past, errors.New("boom"), codes.Unknown},
	}
	for _, tc := range cases {
		if got := grpcbudget.CodeOf(tc.ctx, tc.err); got != tc.want {
			t.Errorf("CodeOf(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestCodeAllocations(t *testing.T) {
	ctx := context.Background()
	for _, err := range []error{
		status.Error(codes.NotFound, "x"),
		fmt.Errorf("wrapped: %w", status.Error(codes.NotFound, "x")),
		&budget.Error{Outcome: budget.OutcomeInsufficient},
		context.Canceled,
		wire.ErrShed,
	} {
		if n := testing.AllocsPerRun(100, func() { grpcbudget.CodeOf(ctx, err) }); n != 0 {
			t.Errorf("CodeOf(%v) allocates %v times", err, n)
		}
	}
}
