package budget_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

type traceKey struct{}

// Detached work keeps the request's values, is not canceled with it, has its
// own bound, and is noted in the request's ledger.
func TestDetachOutlivesTheRequestWithItsOwnBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		req, cancel := budget.Start(context.WithValue(context.Background(), traceKey{}, "trace-1"), 100*time.Millisecond)
		req = budget.WithReserve(req, 20*time.Millisecond)
		time.Sleep(40 * time.Millisecond)
		ctx, cancelD := budget.Detach(req, "audit", 2*time.Second)
		defer cancelD()
		cancel() // the answer went out; the request is over
		if ctx.Err() != nil {
			t.Fatal("detached work was canceled with the request")
		}
		if ctx.Value(traceKey{}) != "trace-1" {
			t.Fatal("detached work lost the request's values")
		}
		if left, _ := budget.Remaining(ctx); left != 2*time.Second {
			t.Fatalf("detached bound %v, want 2s", left)
		}
		if budget.Reserve(ctx) != 0 {
			t.Fatal("detached work must not carry the request's reserve")
		}
		var ev *budget.Event
		for _, e := range budget.LedgerFrom(req).Events() {
			if e.Kind == budget.EventDetach {
				ev = &e
			}
		}
		if ev == nil || ev.Stage != "audit" || ev.Remaining != 60*time.Millisecond || ev.Needed != 2*time.Second {
			t.Fatalf("detach event %+v", ev)
		}
		detached := time.Now()
		<-ctx.Done()
		if time.Since(detached) != 2*time.Second || !errors.Is(context.Cause(ctx), budget.ErrExpired) {
			t.Fatalf("the detached work ended after %v (%v), want its own 2s bound", time.Since(detached), context.Cause(ctx))
		}
	})
}

func TestDetacherWaitsForDetachedWorkAtShutdown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var g budget.Detacher
		if err := g.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		req, cancel := budget.Start(context.Background(), time.Second)
		wrote := false
		g.Go(req, "cache-write", func(ctx context.Context) error {
			time.Sleep(300 * time.Millisecond)
			wrote = ctx.Err() == nil
			return nil
		})
		g.Go(req, "audit", func(ctx context.Context) error { return errors.New("audit store down") })
		cancel()
		// A shutdown that cannot wait long enough is told what was lost.
		short, c2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer c2()
		err := g.Wait(short)
		if !errors.Is(err, context.DeadlineExceeded) || g.Running() != 1 {
			t.Fatalf("Wait = %v with %d running: want a deadline error naming one task", err, g.Running())
		}
		if err := g.Wait(context.Background()); err != nil || !wrote || g.Running() != 0 || g.Failed() != 1 {
			t.Fatalf("Wait = %v, wrote %v, running %d, failed %d", err, wrote, g.Running(), g.Failed())
		}
		var ends []string
		for _, ev := range budget.LedgerFrom(req).Events() {
			if ev.Kind == budget.EventAttempt {
				ends = append(ends, ev.Stage+":"+ev.Outcome.String())
			}
		}
		if len(ends) != 2 || ends[0] != "audit:failed" || ends[1] != "cache-write:ok" {
			t.Fatalf("ledger ends %v", ends)
		}
	})
}
