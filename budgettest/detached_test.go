package budgettest_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget/budgettest"
)

// TestDetachedWorkGoesOnAfterTheCaller checks the detached dependency of the
// demo: the call returns when its caller gives up, and the work goes on until
// it is done, until the deadline handed over with it, or until Close; the
// Probe measures how long it went on.
func TestDetachedWorkGoesOnAfterTheCaller(t *testing.T) {
	t.Parallel()
	hang := func() time.Duration { return -1 }
	cases := []struct {
		name     string
		dep      *budgettest.Dependency
		deadline time.Duration // of the call's context; 0 for none
		cancelAt time.Duration // when the caller gives up
		closeAt  time.Duration // when the test calls Close; 0 for after the work
		wantErr  error
		orphaned time.Duration
	}{
		{"answers in time", &budgettest.Dependency{Detached: true, Delay: 10 * ms}, 0, 50 * ms, 0, nil, 0},
		{"fails in time", &budgettest.Dependency{Detached: true, Delay: 10 * ms, Err: errDown}, 0, 50 * ms, 0, errDown, 0},
		{"caller leaves, work finishes", &budgettest.Dependency{Detached: true, Delay: 100 * ms}, 0, 10 * ms, 0, context.Canceled, 90 * ms},
		{"caller leaves, deadline handed over stops it", &budgettest.Dependency{Detached: true, Delay: 100 * ms}, 50 * ms, 10 * ms, 0, context.Canceled, 40 * ms},
		{"deadline ignored", &budgettest.Dependency{Detached: true, Delay: 100 * ms, IgnoreContext: true}, 50 * ms, 10 * ms, 0, context.Canceled, 90 * ms},
		{"hung until Close", &budgettest.Dependency{Detached: true, Latency: hang}, 0, 10 * ms, 200 * ms, context.Canceled, 190 * ms},
		{"hung until its deadline", &budgettest.Dependency{Detached: true, Hang: true}, 30 * ms, 10 * ms, 0, context.Canceled, 20 * ms},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				probe := new(budgettest.Probe)
				tc.dep.Probe = probe
				ctx, cancel := context.WithCancel(context.Background())
				if tc.deadline > 0 {
					ctx, cancel = context.WithTimeout(context.Background(), tc.deadline)
				}
				defer cancel()
				stopCaller := time.AfterFunc(tc.cancelAt, cancel)
				defer stopCaller.Stop()
				if err := tc.dep.Call(ctx); !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
					t.Fatalf("Call = %v, want %v", err, tc.wantErr)
				}
				if tc.closeAt > 0 {
					time.Sleep(tc.closeAt - tc.cancelAt)
				} else {
					synctest.Wait()
					time.Sleep(time.Second)
				}
				tc.dep.Close()
				if n := probe.Running(); n != 0 {
					t.Fatalf("%d calls still running after Close", n)
				}
				var orphaned time.Duration
				for _, r := range probe.Records() {
					orphaned += r.Orphaned()
				}
				if orphaned != tc.orphaned {
					t.Errorf("work went on %v after the caller gave up, want %v", orphaned, tc.orphaned)
				}
			})
		})
	}
}

// TestLatencyReplacesDelay checks that Latency decides each call's time.
func TestLatencyReplacesDelay(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := 0
		dep := &budgettest.Dependency{Delay: time.Hour, Latency: func() time.Duration { n++; return time.Duration(n) * 10 * ms }}
		for want := 10 * ms; want <= 30*ms; want += 10 * ms {
			start := time.Now()
			if err := dep.Call(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != want {
				t.Errorf("call took %v, want %v", got, want)
			}
		}
	})
}

// TestCallForTracksTheCaller checks that CallFor's Probe sees the request's
// caller give up even when the call's own context was cut off from it, as
// the common bug context.WithTimeout(context.Background(), t) does.
func TestCallForTracksTheCaller(t *testing.T) {
	t.Parallel()
	for _, detached := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			probe := new(budgettest.Probe)
			dep := &budgettest.Dependency{Delay: 100 * ms, Detached: detached, IgnoreContext: detached, Probe: probe}
			user, leave := context.WithTimeout(context.Background(), 30*ms)
			defer leave()
			call, cancel := context.WithTimeout(context.Background(), time.Second) // cut off from user
			defer cancel()
			if err := dep.CallFor(call, user); err != nil {
				t.Fatalf("detached %v: CallFor = %v", detached, err)
			}
			synctest.Wait()
			dep.Close()
			var orphaned time.Duration
			for _, r := range probe.Records() {
				orphaned += r.Orphaned()
			}
			if orphaned != 70*ms {
				t.Errorf("detached %v: the probe saw %v of work after the user left, want 70ms", detached, orphaned)
			}
		})
	}
}
