package grpcbudget_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

// budgetStream is a server stream that only has a context.
type budgetStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *budgetStream) Context() context.Context { return s.ctx }

// TestServerAnswersAnExpiredBudgetDeadlineExceeded is the regression test
// for a handler that gives up when its budget runs out and returns a nil
// error: the call went back to the caller as OK.
func TestServerAnswersAnExpiredBudgetDeadlineExceeded(t *testing.T) {
	t.Parallel()
	giveUp := func(ctx context.Context, _ any) (any, error) {
		<-ctx.Done()
		return struct{}{}, nil
	}
	inTime := func(context.Context, any) (any, error) { return struct{}{}, nil }
	cases := []struct {
		name    string
		handler grpc.UnaryHandler
		code    codes.Code
	}{
		{"gives up, returns nil", giveUp, codes.DeadlineExceeded},
		{"answers in time", inTime, codes.OK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 50*ms)
				defer cancel()
				u := grpcbudget.UnaryServerInterceptor(edge.WithStage("checkout"))
				_, err := u(ctx, nil, &grpc.UnaryServerInfo{FullMethod: "/svc/M"}, tc.handler)
				if got := status.Code(err); got != tc.code {
					t.Fatalf("unary: %v (%v), want %v", got, err, tc.code)
				}
				s := grpcbudget.StreamServerInterceptor(edge.WithPolicy(&wire.Policy{Default: 50 * ms}))
				err = s(nil, &budgetStream{ctx: context.Background()}, &grpc.StreamServerInfo{FullMethod: "/svc/S"},
					func(_ any, ss grpc.ServerStream) error {
						_, err := tc.handler(ss.Context(), nil)
						return err
					})
				if got := status.Code(err); got != tc.code {
					t.Fatalf("stream: %v (%v), want %v", got, err, tc.code)
				}
			})
		})
	}
}

// TestServerExpiredBudgetIsNeverOK calls, over the wire, a handler that gives
// up when its budget runs out and returns an empty reply with a nil error.
// The budget travels as Request-Timeout-Ms only, under a client deadline far
// away, so the answer is the server's and not the client's own timer.
func TestServerExpiredBudgetIsNeverOK(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, withServer(grpcbudget.UnaryServerInterceptor(), grpcbudget.StreamServerInterceptor()))
	for i := range 5 {
		if err := call(t, c, 10*time.Second, "give-up", "request-timeout-ms", "30"); status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("call %d: %v, want DEADLINE_EXCEEDED", i, err)
		}
	}
}

// TestServerKeepsAnAnswerMargin checks that the handler's deadline sits the
// answer margin before the caller's.
func TestServerKeepsAnAnswerMargin(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts []edge.ServerOption
		want time.Duration
	}{
		{"adaptive, nothing seen yet: 1 ms", nil, 99 * ms},
		{"fixed", []edge.ServerOption{edge.WithAnswerMargin(3 * ms)}, 97 * ms},
		{"fixed, at most 1/10 of the time left", []edge.ServerOption{edge.WithAnswerMargin(50 * ms)}, 90 * ms},
		{"off", []edge.ServerOption{edge.WithAnswerMargin(-1)}, 100 * ms},
		{"a larger reserve wins", []edge.ServerOption{edge.WithPolicy(&wire.Policy{AnswerMargin: 5 * ms})}, 95 * ms},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 100*ms)
				defer cancel()
				var got time.Duration
				_, err := grpcbudget.UnaryServerInterceptor(tc.opts...)(ctx, nil, &grpc.UnaryServerInfo{FullMethod: "/svc/M"},
					func(ctx context.Context, _ any) (any, error) {
						dl, _ := ctx.Deadline()
						got = time.Until(dl)
						return struct{}{}, nil
					})
				if err != nil || got != tc.want {
					t.Errorf("handler had %v (%v), want %v", got, err, tc.want)
				}
			})
		})
	}
}

// TestServerMarginLearnsLateness checks that the adaptive margin grows after
// handlers returned late past their deadline, with the context's error as
// most handlers do.
func TestServerMarginLearnsLateness(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		u := grpcbudget.UnaryServerInterceptor()
		info := &grpc.UnaryServerInfo{FullMethod: "/svc/M"}
		late := func(ctx context.Context, _ any) (any, error) {
			<-ctx.Done()
			time.Sleep(4 * ms) // the answer leaves late
			return nil, ctx.Err()
		}
		for range 8 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, _ = u(ctx, nil, info, late)
			cancel()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var left time.Duration
		_, _ = u(ctx, nil, info, func(ctx context.Context, _ any) (any, error) {
			dl, _ := ctx.Deadline()
			left = time.Until(dl)
			return struct{}{}, nil
		})
		if margin := time.Second - left; margin < 5*ms || margin > 10*ms {
			t.Errorf("margin after answers 4 ms late: %v, want between 5 and 10 ms", margin)
		}
	})
}
