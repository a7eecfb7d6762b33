package grpcbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

// A plain grpc-go client, our server: the client's grpc-timeout is the
// handler's deadline (less the reserve), the handler's work stops then, and
// the client gets DEADLINE_EXCEEDED in time.
func TestInteropPlainClientToOurServer(t *testing.T) {
	t.Parallel()
	p := edge.WithPolicy(&wire.Policy{AnswerMargin: 5 * ms})
	c, svc := serve(t, withServer(grpcbudget.UnaryServerInterceptor(p), grpcbudget.StreamServerInterceptor(p)))
	ctx, cancel := context.WithTimeout(context.Background(), 80*ms)
	defer cancel()
	start := time.Now()
	err := do(ctx, c, "hang")
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v", err)
	}
	if el := time.Since(start); el > 250*ms {
		t.Fatalf("the call took %v of an 80ms timeout", el)
	}
	s := svc.last()
	if !s.deadline || s.remaining > 75*ms || s.remaining < 30*ms {
		t.Fatalf("the handler saw %v left, want the grpc-timeout less the reserve", s.remaining)
	}
	waitFor(t, func() bool { return !svc.last().stopped.IsZero() })
	if over := svc.last().stopped.Sub(start.Add(80 * ms)); over > 50*ms {
		t.Fatalf("the handler's work stopped %v after the client's deadline", over)
	}
}

// Ours on both sides: the server clamps what the client sends, and the
// client's metadata and grpc-timeout agree.
func TestInteropOursBothSides(t *testing.T) {
	t.Parallel()
	p := edge.WithPolicy(&wire.Policy{Max: 300 * ms})
	c, svc := serve(t, withServer(grpcbudget.UnaryServerInterceptor(p), grpcbudget.StreamServerInterceptor(p)),
		withClient(grpcbudget.WithBudgetMetadata())...)
	ctx, cancel := budget.Start(context.Background(), 10*time.Second)
	defer cancel()
	if err := do(ctx, c, ""); err != nil {
		t.Fatal(err)
	}
	if s := svc.last(); !s.deadline || s.remaining > 300*ms || s.remaining < 200*ms {
		t.Fatalf("the handler saw %v left, want the server's maximum", s.remaining)
	}
	ctx, cancel = budget.Start(context.Background(), 60*ms)
	defer cancel()
	if err := do(ctx, c, "sleep:1s"); !errors.Is(err, context.DeadlineExceeded) || status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v", err)
	}
}

// Our client, a plain grpc-go server: the budget reaches the server as
// grpc-timeout and ends its work; the client reports the expiry as both
// DEADLINE_EXCEEDED and context.DeadlineExceeded.
func TestInteropOurClientToPlainServer(t *testing.T) {
	t.Parallel()
	c, svc := serve(t, nil, withClient()...)
	ctx, cancel := budget.Start(context.Background(), 50*ms)
	defer cancel()
	start := time.Now()
	err := do(ctx, c, "hang")
	if status.Code(err) != codes.DeadlineExceeded || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v: want DEADLINE_EXCEEDED matching context.DeadlineExceeded", err)
	}
	if el := time.Since(start); el > 200*ms {
		t.Fatalf("the call took %v of a 50ms budget", el)
	}
	// The plain server's handler stopped too: grpc-timeout reached it.
	waitFor(t, func() bool { return !svc.last().stopped.IsZero() })
	if over := svc.last().stopped.Sub(start.Add(50 * ms)); over > 50*ms {
		t.Fatalf("the server's work stopped %v after the deadline", over)
	}
}
