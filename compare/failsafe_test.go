package compare_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/timeout"

	"github.com/timebudget/budget/compare"
)

var errDown = errors.New("down")

// failsafe-go reads time.Now and starts time.AfterFunc timers, both of which
// a synctest bubble fakes. These tests check that its breaker and its timeout
// keep their documented timing in fake time, so the comparison may run it in
// a bubble.
func TestFailsafeInBubble(t *testing.T) {
	t.Parallel()

	t.Run("the breaker opens, waits its delay, and lets its trial calls through", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			cb := circuitbreaker.NewBuilder[any]().
				WithFailureRateThreshold(0.5, 20, time.Second).
				WithDelay(time.Second).
				WithSuccessThreshold(3).
				Build()
			exec := failsafe.With[any](cb)
			for i := range 20 {
				if i > 0 {
					time.Sleep(time.Millisecond)
				}
				_ = exec.Run(func() error { return errDown })
			}
			if !cb.IsOpen() {
				t.Fatalf("20 failures in a row left the breaker %v", cb.State())
			}
			opened := time.Now()
			if err := exec.Run(func() error { return nil }); !errors.Is(err, circuitbreaker.ErrOpen) {
				t.Fatalf("an open breaker returned %v", err)
			}
			time.Sleep(time.Second - time.Nanosecond)
			if err := exec.Run(func() error { return nil }); !errors.Is(err, circuitbreaker.ErrOpen) {
				t.Fatalf("1ns before its delay the breaker returned %v", err)
			}
			time.Sleep(time.Nanosecond)
			if got := time.Since(opened); got != time.Second {
				t.Fatalf("fake time moved %v, want 1s", got)
			}
			// Three trial calls start together; a fourth is rejected.
			release := make(chan struct{})
			errs := make(chan error, 3)
			for range 3 {
				go func() {
					errs <- exec.Run(func() error { <-release; return nil })
				}()
			}
			synctest.Wait()
			if !cb.IsHalfOpen() {
				t.Fatalf("after its delay the breaker is %v", cb.State())
			}
			if err := exec.Run(func() error { return nil }); !errors.Is(err, circuitbreaker.ErrOpen) {
				t.Fatalf("a fourth call during three trials returned %v", err)
			}
			close(release)
			for range 3 {
				if err := <-errs; err != nil {
					t.Fatalf("trial call: %v", err)
				}
			}
			if !cb.IsClosed() {
				t.Fatalf("three successful trials left the breaker %v", cb.State())
			}
		})
	})

	t.Run("the timeout fires at its time limit and cancels the call", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			exec := failsafe.With[any](timeout.New[any](3 * time.Second))
			start := time.Now()
			err := exec.RunWithExecution(func(e failsafe.Execution[any]) error {
				<-e.Context().Done()
				return e.Context().Err()
			})
			if !errors.Is(err, timeout.ErrExceeded) || time.Since(start) != 3*time.Second {
				t.Fatalf("returned %v after %v, want timeout.ErrExceeded after 3s", err, time.Since(start))
			}
		})
	})

	t.Run("a request deadline before the timeout ends the call", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			cb := circuitbreaker.NewBuilder[any]().WithFailureThreshold(5).Build()
			exec := failsafe.With[any](cb, timeout.New[any](3*time.Second))
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			err := exec.WithContext(ctx).RunWithExecution(func(e failsafe.Execution[any]) error {
				<-e.Context().Done()
				return e.Context().Err()
			})
			if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
				t.Fatalf("returned %v after %v, want the request's deadline after 1s", err, time.Since(start))
			}
			if got := cb.Metrics().Failures(); got != 1 {
				t.Fatalf("the breaker counted %d failures, want 1", got)
			}
		})
	})
}

// TestExecutorIsTheTunedBreaker checks that Executor's breaker opens as the
// configuration says: after MinCalls failures in a row within Period, the
// next call is rejected without running.
func TestExecutorIsTheTunedBreaker(t *testing.T) {
	t.Parallel()
	c := compare.TunedFailsafe
	exec := c.Executor()
	failing := errors.New("dependency failed")
	for range c.MinCalls {
		_ = exec.Run(func() error { return failing })
	}
	ran := false
	err := exec.Run(func() error { ran = true; return nil })
	if ran || !errors.Is(err, circuitbreaker.ErrOpen) {
		t.Fatalf("after %d failures the call ran (%v) with error %v; want it rejected with circuitbreaker.ErrOpen", c.MinCalls, ran, err)
	}
}
