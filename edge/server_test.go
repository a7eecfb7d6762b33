package edge_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// TestServerSteps: the steps every server adapter shares.
func TestServerSteps(t *testing.T) {
	t.Parallel()
	func() {
		defer func() {
			err, _ := recover().(error)
			if !errors.Is(err, budget.ErrMisconfigured) || !errors.Is(err, wire.ErrInvalidPolicy) || err.Error()[:8] != "myproto:" {
				t.Errorf("PolicySwitch with an invalid policy: panic %v", err)
			}
		}()
		edge.PolicySwitch("myproto", &wire.Policy{Max: -1})
	}()
	if p := edge.OrDefault(nil).Load(); p == nil || *p != (wire.Policy{}) {
		t.Errorf("OrDefault(nil) holds %+v, want the zero policy", p)
	}
	if edge.Named("", "/a/B") != "/a/B" || edge.Named("pricing", "/a/B") != "pricing" {
		t.Error("Named")
	}
	op := &budget.Op{Name: "x"}
	if edge.OpOf(nil, "m") != nil || edge.OpOf(func(string) *budget.Op { return op }, "m") != op {
		t.Error("OpOf")
	}
	if !edge.IsExpiry(fmt.Errorf("x: %w", wire.ErrShed)) || !edge.IsExpiry(budget.ErrInsufficient) || edge.IsExpiry(context.Canceled) {
		t.Error("IsExpiry")
	}

	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel()
	<-past.Done()
	if !edge.DeadlinePassed(past) || edge.DeadlinePassed(context.Background()) {
		t.Error("DeadlinePassed")
	}
	if err := edge.Late(past, "pricing"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Late after the deadline: %v", err)
	} else if be, ok := errors.AsType[*budget.Error](err); !ok || be.Stage != "pricing" {
		t.Errorf("Late: %v, want a budget error of stage pricing", err)
	}
	canceled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if edge.Late(canceled, "p") != nil || edge.Late(context.Background(), "p") != nil {
		t.Error("Late for a canceled or running call")
	}
	k := edge.NewMarginKeeper(0)
	before := k.For(time.Second)
	for range 20 {
		k.Learn(past)
	}
	if k.For(time.Second) <= before {
		t.Errorf("Learn taught nothing: %v, then %v", before, k.For(time.Second))
	}

	ran := false
	if err := edge.Run(context.Background(), nil, func(context.Context) error { ran = true; return nil }); err != nil || !ran {
		t.Errorf("Run without an op: %v, ran %v", err, ran)
	}
	ran = false
	if err := edge.Run(context.Background(), op, func(context.Context) error { ran = true; return nil }); err != nil || !ran {
		t.Errorf("Run through an op: %v, ran %v", err, ran)
	}
}
