package grpcbudget_test

import (
	"github.com/timebudget/budget/edge"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
)

// Regression: after one burst of calls sent with 3 ms deadlines, every
// well-behaved 1 s call to a 20 ms method was refused: the burst left only
// cut-off samples, read as "never finishes". A cut-off at 3 ms says nothing
// about a caller with a second, so the short callers refuse only callers
// like themselves.
func TestServerAdmissionSurvivesABurstOfShortDeadlines(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "unary"}
	ops := edge.WithAdmission(edge.Ops{"/grpc.testing.TestService/UnaryCall": op}.Op)
	c, _ := serve(t, withServer(grpcbudget.UnaryServerInterceptor(ops), grpcbudget.StreamServerInterceptor(ops)))
	for range 30 {
		_ = call(t, c, 3*ms, "sleep:20ms") // the burst: every call cut off
	}
	refused := 0
	for range 30 {
		err := call(t, c, time.Second, "sleep:20ms")
		if status.Code(err) == codes.DeadlineExceeded {
			refused++
		} else if err != nil {
			t.Fatalf("a 1 s call: %v", err)
		}
	}
	if refused != 0 {
		t.Fatalf("%d of 30 well-behaved 1 s calls were refused after a burst of 3 ms deadlines", refused)
	}
}
