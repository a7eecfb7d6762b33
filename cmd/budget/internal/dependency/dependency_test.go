package dependency

import (
	"context"
	"errors"
	"fmt"
	"github.com/timebudget/budget/cmd/budget/internal/scenario"
	"testing"
	"testing/synctest"
	"time"
)

// TestDependencyFaults checks how each fault shapes a call, in fake time.
func TestDependencyFaults(t *testing.T) {
	t.Parallel()
	const base = 20 * time.Millisecond
	cases := []struct {
		name    string
		fault   scenario.Fault
		sent    int64 // of 10 requests, before the call
		wantErr error
		min     time.Duration
		max     time.Duration
	}{
		{"none", scenario.Fault{}, 0, nil, base * 8 / 10, base * 12 / 10},
		{"slow", scenario.Fault{Kind: scenario.FaultSlow, D: 70 * time.Millisecond}, 0, nil, 70 * time.Millisecond, 70 * time.Millisecond},
		{"slowdown, before it", scenario.Fault{Kind: scenario.FaultSlowdown, D: time.Second, After: 0.5}, 4, nil, base * 8 / 10, base * 12 / 10},
		{"slowdown, after it", scenario.Fault{Kind: scenario.FaultSlowdown, D: 200 * time.Millisecond, After: 0.5}, 5, context.DeadlineExceeded, 100 * time.Millisecond, 100 * time.Millisecond},
		{"hang", scenario.Fault{Kind: scenario.FaultHang}, 0, context.DeadlineExceeded, 100 * time.Millisecond, 100 * time.Millisecond},
		{"fail", scenario.Fault{Kind: scenario.FaultFail}, 0, ErrDependencyFailed, 0, 0},
	}
	for _, tc := range cases {
		for _, cascade := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, cascade %v", tc.name, cascade), func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(t *testing.T) {
					tr := &Traffic{Total: 10}
					tr.Sent.Store(tc.sent)
					d := New("dep", base, cascade, tc.fault, tr)
					defer d.Close()
					ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
					defer cancel()
					start := time.Now()
					err := d.serve(ctx)
					if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
						t.Fatalf("cascade %v: err = %v, want %v", cascade, err, tc.wantErr)
					}
					if took := time.Since(start); took < tc.min || took > tc.max {
						t.Errorf("cascade %v: the call took %v, want %v to %v", cascade, took, tc.min, tc.max)
					}
					if d.Calls() != 1 {
						t.Errorf("calls() = %d, want 1", d.Calls())
					}
				})
			})
		}
	}
}

// TestDependencyWaste checks the wasted work each kind of dependency
// reports when its caller leaves at 10 ms: a cascading one stops at once; a
// non-cascading one goes on to the deadline handed over (50 ms), or, with
// none, until it is closed.
func TestDependencyWaste(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		cascade  bool
		deadline time.Duration
		want     time.Duration
	}{
		{"cascading", true, 50 * time.Millisecond, 0},
		{"non-cascading, deadline handed over", false, 50 * time.Millisecond, 40 * time.Millisecond},
		{"non-cascading, no deadline", false, 0, 490 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				d := New("payment", 60*time.Millisecond, tc.cascade, scenario.Fault{Kind: scenario.FaultHang}, nil)
				ctx, cancel := context.WithCancel(context.Background())
				if tc.deadline > 0 {
					ctx, cancel = context.WithTimeout(context.Background(), tc.deadline)
				}
				defer cancel()
				time.AfterFunc(10*time.Millisecond, cancel)
				_ = d.serve(ctx)
				time.Sleep(490 * time.Millisecond)
				d.Close()
				waste, calls := d.Waste()
				if waste != tc.want || (calls > 0) != (tc.want > 0) {
					t.Errorf("waste %v over %d calls, want %v", waste, calls, tc.want)
				}
			})
		})
	}
}
