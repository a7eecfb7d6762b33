package compare_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/timeout"
	"github.com/timebudget/budget"
)

// refusingOp returns an Op whose measurements refuse every call with a minute
// left: its calls all ran past ten minutes. Its window and probe interval are
// an hour, so the benchmark measures refusals only and no probe gets through.
func refusingOp() *budget.Op {
	op := &budget.Op{Name: "dependency", Prior: 50 * time.Millisecond, ProbeEvery: -1} // no probe: refusals only
	op.Estimator.Window = time.Hour
	for range 100 {
		op.Estimator.RecordCensored(10 * time.Minute)
	}
	return op
}

// openBreaker returns failsafe-go's executor as the comparison composes it (a
// breaker around a timeout), with the breaker open for the next hour.
func openBreaker() (failsafe.Executor[any], circuitbreaker.CircuitBreaker[any]) {
	cb := circuitbreaker.NewBuilder[any]().
		WithFailureRateThreshold(0.5, 20, time.Second).
		WithDelay(time.Hour).
		WithSuccessThreshold(3).
		Build()
	cb.Open()
	return failsafe.With[any](cb, timeout.New[any](3*time.Second)), cb
}

func noop(context.Context) error { return nil }

// The cost of refusing a call: budget's Op.Do when admission says no, beside
// failsafe-go's open breaker rejecting, in the same run.
func BenchmarkRefusal(b *testing.B) {
	b.Run("budget/Op.Do", func(b *testing.B) {
		op := refusingOp()
		ctx, cancel := budget.Start(context.Background(), time.Minute)
		defer cancel()
		if err := op.Do(ctx, noop); !errors.Is(err, budget.ErrInsufficient) {
			b.Fatalf("not refused: %v", err)
		}
		b.ReportAllocs()
		for b.Loop() {
			_ = op.Do(ctx, noop)
		}
	})
	b.Run("budget/Start+Op.Do", func(b *testing.B) {
		// A budget per request, as a handler starts one.
		op := refusingOp()
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := budget.Start(context.Background(), time.Minute)
			_ = op.Do(ctx, noop)
			cancel()
		}
	})
	b.Run("budget/Op.Admit", func(b *testing.B) {
		// The decision alone, without the error, ledger entry and events.
		op := refusingOp()
		ctx, cancel := budget.Start(context.Background(), time.Minute)
		defer cancel()
		b.ReportAllocs()
		for b.Loop() {
			if op.Admit(ctx).Admit {
				b.Fatal("admitted")
			}
		}
	})
	b.Run("failsafe-go/executor.Run", func(b *testing.B) {
		// As the comparison calls it: the executor with the request's context.
		exec, _ := openBreaker()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		run := func() error {
			return exec.WithContext(ctx).RunWithExecution(func(e failsafe.Execution[any]) error { return noop(e.Context()) })
		}
		if err := run(); !errors.Is(err, circuitbreaker.ErrOpen) {
			b.Fatalf("not rejected: %v", err)
		}
		b.ReportAllocs()
		for b.Loop() {
			_ = run()
		}
	})
	b.Run("failsafe-go/TryAcquirePermit", func(b *testing.B) {
		// The breaker's decision alone.
		_, cb := openBreaker()
		b.ReportAllocs()
		for b.Loop() {
			if cb.TryAcquirePermit() {
				b.Fatal("permitted")
			}
		}
	})
}
