package compare

import (
	"context"
	"fmt"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/timeout"
)

// FailsafeConfig tunes the failsafe-go strategy: a circuit breaker with
// time-based failure-rate thresholding composed with a timeout policy.
type FailsafeConfig struct {
	// FailureRate is the share of failed calls, in (0, 1], over Period that
	// opens the breaker.
	FailureRate float64
	// MinCalls is how many calls Period must hold before FailureRate is
	// judged.
	MinCalls uint
	// Period is the rolling window over which failures are counted.
	Period time.Duration
	// Delay is how long the breaker stays open before it lets trial calls
	// through (half-open).
	Delay time.Duration
	// Trials is how many trial calls the half-open breaker lets through; all
	// of them must succeed to close it, and one failure opens it again.
	Trials uint
	// Timeout is the per-call timeout of the timeout policy.
	Timeout time.Duration
}

// TunedFailsafe is the failsafe-go configuration the comparison uses: the
// breaker opens when at least half of at least 20 calls in the last second
// failed, stays open 1 s, then lets 3 trial calls through, and every call
// has a 3 s timeout (the careful code's per-call timeout).
var TunedFailsafe = FailsafeConfig{
	FailureRate: 0.5,
	MinCalls:    20,
	Period:      time.Second,
	Delay:       time.Second,
	Trials:      3,
	Timeout:     3 * time.Second,
}

// Failsafe is failsafe-go's circuit breaker around its timeout policy,
// executed with the request's context, so a call ends at the earlier of the
// timeout and the request's deadline. Every error counts as a failure. When
// the breaker rejects a call (circuitbreaker.ErrOpen) or the call fails while
// the user is still waiting, the request answers from the fallback.
func Failsafe(c FailsafeConfig) Strategy {
	return Strategy{
		Name: fmt.Sprintf("failsafe-go (breaker %.0f%%/%d/%v, delay %v, %d trials; timeout %v)",
			100*c.FailureRate, c.MinCalls, c.Period, c.Delay, c.Trials, c.Timeout),
		New: func(Scenario) Handler {
			exec := c.Executor()
			return func(ctx context.Context, call, fallback func(context.Context) error) Answer {
				err := exec.WithContext(ctx).RunWithExecution(func(e failsafe.Execution[any]) error {
					return call(e.Context())
				})
				return orFallback(ctx, err, fallback)
			}
		},
	}
}

// Executor returns the failsafe-go executor c describes: a new circuit
// breaker, with no history, around a timeout policy of c.Timeout. Share one
// executor between the calls whose failures the breaker should count; it is
// safe for concurrent use. The demo's overload case uses it, so the breaker
// it shows is the one tuned here.
func (c FailsafeConfig) Executor() failsafe.Executor[any] {
	return failsafe.With[any](c.breaker(), timeout.New[any](c.Timeout))
}

// breaker builds the circuit breaker c describes.
func (c FailsafeConfig) breaker() circuitbreaker.CircuitBreaker[any] {
	return circuitbreaker.NewBuilder[any]().
		WithFailureRateThreshold(c.FailureRate, c.MinCalls, c.Period).
		WithDelay(c.Delay).
		WithSuccessThreshold(c.Trials).
		Build()
}
