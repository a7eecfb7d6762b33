package edge_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
)

func TestSend(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		budget    time.Duration // 0: no deadline
		reserve   time.Duration
		o         edge.Outbound
		ok        bool
		refused   bool
		left      time.Duration
		timeout   string // "": not checked
		attempted bool
	}{
		{name: "no deadline", ok: false},
		{name: "all the time left", budget: time.Second, ok: true, left: time.Second},
		{name: "transit taken off", budget: time.Second, o: edge.Outbound{Transit: 200 * ms}, ok: true, left: 800 * ms},
		{name: "the reserve given to the callee", budget: time.Second, reserve: 300 * ms, ok: true, left: time.Second},
		{name: "the reserve kept", budget: time.Second, reserve: 300 * ms, o: edge.Outbound{KeepReserve: true}, ok: true, left: 700 * ms},
		{name: "under the minimum useful time", budget: 50 * ms, o: edge.Outbound{MinUseful: 100 * ms}, ok: true, refused: true},
		{name: "under a millisecond after the reserve", budget: time.Second, reserve: time.Second - ms/2,
			o: edge.Outbound{KeepReserve: true}, ok: true, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// On the bubble's clock the figures are exact.
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tc.budget > 0 {
					var cancel context.CancelFunc
					ctx, cancel = budget.Start(ctx, tc.budget)
					defer cancel()
					ctx = budget.WithReserve(ctx, tc.reserve)
				}
				call, ok, err := edge.Send(ctx, "dependency", tc.o)
				if ok != tc.ok || (err != nil) != tc.refused {
					t.Fatalf("ok %v, err %v; want ok %v, refused %v", ok, err, tc.ok, tc.refused)
				}
				if tc.refused {
					if !errors.Is(err, budget.ErrInsufficient) {
						t.Errorf("refusal %v does not match ErrInsufficient", err)
					}
					return
				}
				if !ok {
					return
				}
				if call.Left != tc.left || !call.Deadline.Equal(call.Reading.Now.Add(call.Left)) {
					t.Errorf("call %+v; want %v left and Deadline = Now + Left", call, tc.left)
				}
				if v := string(call.AppendTimeout(nil)); v != fmt.Sprint(call.Left.Milliseconds()) {
					t.Errorf("timeout value %q for %v", v, call.Left)
				}
				if v, ok := call.AppendDeadline(nil); !ok || string(v) != fmt.Sprint(call.Deadline.UnixMilli()) {
					t.Errorf("deadline value %q, %v for %v", v, ok, call.Deadline)
				}
				if _, ok := call.AppendAttempt(nil); ok {
					t.Error("an attempt number outside a retry loop")
				}
			})
		})
	}
}

func TestSendAllocs(t *testing.T) {
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	var buf [24]byte
	n := testing.AllocsPerRun(100, func() {
		call, _, _ := edge.Send(ctx, "dependency", edge.Outbound{})
		_ = call.AppendTimeout(buf[:0])
		_, _ = call.AppendDeadline(buf[:0])
	})
	if n != 0 {
		t.Errorf("Send allocates %v times, want 0", n)
	}
}

func ExampleSend() {
	ctx, cancel := budget.Start(context.Background(), 2*time.Second)
	defer cancel()
	call, ok, err := edge.Send(ctx, "inventory", edge.Outbound{Transit: 500 * time.Millisecond})
	if err != nil {
		return // refused locally: the call is not sent
	}
	fmt.Println(ok, call.Left <= 1500*time.Millisecond, len(call.AppendTimeout(nil)) == 4)
	// Output: true true true
}
