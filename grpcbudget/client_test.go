package grpcbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

// withClient returns dial options installing our client interceptors.
func withClient(opts ...edge.ClientOption) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(grpcbudget.UnaryClientInterceptor(opts...)),
		grpc.WithChainStreamInterceptor(grpcbudget.StreamClientInterceptor(opts...)),
	}
}

func TestClientSendsTheRemainingBudget(t *testing.T) {
	t.Parallel()
	// A plain server: grpc-go turns grpc-timeout into the handler's deadline.
	c, svc := serve(t, nil, withClient(grpcbudget.WithBudgetMetadata(), edge.WithTransit(20*ms))...)
	ctx, cancel := budget.Start(context.Background(), 700*ms)
	defer cancel()
	if err := do(ctx, c, ""); err != nil {
		t.Fatal(err)
	}
	s := svc.last()
	if !s.deadline || s.remaining > 680*ms || s.remaining < 550*ms {
		t.Fatalf("the server saw %v left (deadline %v), want the budget less transit", s.remaining, s.deadline)
	}
	left, err := strconv.Atoi(first(s.md["request-timeout-ms"]))
	if err != nil || left > 680 || left < 550 {
		t.Fatalf("request-timeout-ms = %q", s.md["request-timeout-ms"])
	}
	dl, ok, err := wire.ParseRequestDeadline(first(s.md["request-deadline"]))
	want, _ := ctx.Deadline()
	if !ok || err != nil || dl.After(want.Add(-20*ms)) || want.Sub(dl) > 25*ms {
		t.Fatalf("request-deadline = %v, want about %v less transit", dl, want)
	}
}

func TestClientWithoutDeadlineSendsNothing(t *testing.T) {
	t.Parallel()
	c, svc := serve(t, nil, withClient(grpcbudget.WithBudgetMetadata())...)
	if err := do(context.Background(), c, ""); err != nil {
		t.Fatal(err)
	}
	if s := svc.last(); s.deadline || s.md["request-timeout-ms"] != nil {
		t.Fatalf("the server saw %+v", s)
	}
}

func TestClientRefusesBeforeSending(t *testing.T) {
	t.Parallel()
	slow := &budget.Op{Name: "report", Prior: 500 * ms}
	c, svc := serve(t, nil, withClient(edge.WithMinUseful(50*ms), edge.WithAdmission(
		edge.Ops{"/grpc.testing.TestService/UnaryCall": slow, "/grpc.testing.TestService/StreamingOutputCall": slow}.Op))...)

	cases := []struct {
		name         string
		budget       time.Duration
		insufficient bool // matches ErrInsufficient, else DeadlineExceeded
	}{
		{"op cannot fit", 200 * ms, true},
		{"below the minimum useful time", 30 * ms, true},
		{"already expired", -time.Millisecond, false},
	}
	for _, tc := range cases {
		ctx, cancel := budget.Start(context.Background(), tc.budget)
		for _, kind := range []string{"unary", "stream"} {
			var err error
			if kind == "unary" {
				err = do(ctx, c, "")
			} else {
				err = stream(ctx, c, 1)
			}
			if status.Code(err) != codes.DeadlineExceeded {
				t.Errorf("%s, %s: code %v (%v), want DEADLINE_EXCEEDED", tc.name, kind, status.Code(err), err)
			}
			if errors.Is(err, budget.ErrInsufficient) != tc.insufficient || errors.Is(err, context.DeadlineExceeded) == tc.insufficient {
				t.Errorf("%s, %s: %v: ErrInsufficient %v, DeadlineExceeded %v", tc.name, kind, err,
					errors.Is(err, budget.ErrInsufficient), errors.Is(err, context.DeadlineExceeded))
			}
		}
		cancel()
	}
	if n := svc.calls.Load(); n != 0 {
		t.Fatalf("refused calls reached the server %d times", n)
	}
	ctx, cancel := budget.Start(context.Background(), 2*time.Second)
	defer cancel()
	if err := do(ctx, c, ""); err != nil || svc.calls.Load() != 1 {
		t.Fatalf("a call with time enough: %v", err)
	}
}

// The CANCELLED-after-deadline rule on the client side, with a fake invoker
// standing for a server or proxy that answers CANCELLED when it saw the
// stream reset by the deadline.
func TestClientCancelledAfterDeadlineIsDeadlineExceeded(t *testing.T) {
	t.Parallel()
	u := grpcbudget.UnaryClientInterceptor()
	canceled := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
		<-ctx.Done()
		return status.Error(codes.Canceled, "stream reset")
	}
	ctx, cancel := budget.Start(context.Background(), 20*ms)
	defer cancel()
	err := u(ctx, "/svc/M", nil, nil, nil, canceled)
	if status.Code(err) != codes.DeadlineExceeded || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after the deadline: %v", err)
	}
	if status.Convert(err).Message() == "" {
		t.Fatal("the message was lost")
	}
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if err := u(ctx, "/svc/M", nil, nil, nil, canceled); status.Code(err) != codes.Canceled {
		t.Fatalf("canceled by the caller: %v, want CANCELLED", err)
	}
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 2s")
		}
		time.Sleep(time.Millisecond)
	}
}

// Inside a retry loop the client sends the attempt number; the server side
// records it on the arrival event.
func TestAttemptNumberCrossesTheWire(t *testing.T) {
	t.Parallel()
	arrivals := make(chan int, 4)
	obs := budget.ObserverFunc(func(_ context.Context, ev budget.Event) {
		if ev.Kind == budget.EventArrival {
			arrivals <- ev.Attempt
		}
	})
	c, svc := serve(t, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpcbudget.UnaryServerInterceptor(edge.WithObserver(obs)))},
		withClient(grpcbudget.WithBudgetMetadata())...)
	ctx, cancel := budget.Start(context.Background(), 2*time.Second)
	defer cancel()
	n := 0
	retry := &budget.Retry{MaxAttempts: 3, Backoff: time.Millisecond}
	err := retry.Do(ctx, &budget.Op{Name: "unary"}, func(ctx context.Context) error {
		n++
		if err := do(ctx, c, ""); err != nil || n < 2 {
			return errors.Join(err, errors.New("try again"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := first(svc.last().md["request-attempt"]); got != "2" {
		t.Fatalf("request-attempt = %q, want 2", got)
	}
	if a, b := <-arrivals, <-arrivals; a != 1 || b != 2 {
		t.Fatalf("arrivals recorded attempts %d, %d; want 1, 2", a, b)
	}
}
