package grpcbudget

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget/edge/pick"
)

// The table of the balancer's doc, code by code.
func TestBalancerResultOf(t *testing.T) {
	failed := []codes.Code{codes.Unavailable, codes.ResourceExhausted, codes.Unknown, codes.Internal, codes.DataLoss}
	answered := []codes.Code{codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
		codes.Unauthenticated, codes.FailedPrecondition, codes.Aborted, codes.OutOfRange, codes.Unimplemented}
	for _, cutOff := range []bool{false, true} {
		for _, c := range failed {
			if got := resultOf(status.Error(c, "x"), cutOff); got != pick.Failed {
				t.Errorf("%v: %v, want Failed", c, got)
			}
		}
		for _, c := range answered {
			if got := resultOf(status.Error(c, "x"), cutOff); got != pick.Answered {
				t.Errorf("%v: %v, want Answered", c, got)
			}
		}
		if got := resultOf(nil, cutOff); got != pick.OK {
			t.Errorf("no error: %v, want OK", got)
		}
		if got := resultOf(status.Error(codes.Canceled, "x"), cutOff); got != pick.Canceled {
			t.Errorf("CANCELLED: %v, want Canceled", got)
		}
	}
	if got := resultOf(status.Error(codes.DeadlineExceeded, "x"), true); got != pick.Expired {
		t.Errorf("DEADLINE_EXCEEDED at the deadline: %v, want Expired", got)
	}
	if got := resultOf(status.Error(codes.DeadlineExceeded, "shed"), false); got != pick.Failed {
		t.Errorf("DEADLINE_EXCEEDED with time left: %v, want Failed", got)
	}
	if got := resultOf(errors.New("not a status"), false); got != pick.Failed {
		t.Errorf("an error with no status (UNKNOWN): %v, want Failed", got)
	}
	if got := resultOf(context.DeadlineExceeded, true); got != pick.Expired {
		t.Errorf("context.DeadlineExceeded at the deadline: %v, want Expired", got)
	}
}
