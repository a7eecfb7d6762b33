package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Defaults of a zero [Retry].
const (
	// DefaultMaxAttempts is how many attempts, the first included, a Retry
	// with a zero MaxAttempts makes at most.
	DefaultMaxAttempts = 3
	// DefaultBackoff is the wait before the first retry.
	DefaultBackoff = 100 * time.Millisecond
	// DefaultMaxBackoff caps the wait before any retry, before jitter.
	DefaultMaxBackoff = 5 * time.Second
	// DefaultMultiplier is the growth of the wait from one retry to the next.
	DefaultMultiplier = 2.0
	// DefaultJitter is the fraction by which each wait is spread (±20 %), the
	// value gRPC uses.
	DefaultJitter = 0.2
)

// Retry is a retry policy that spends the request's budget instead of
// ignoring it: before each retry it checks that the backoff plus the op's
// minimum useful time (and, once the op has measurements, the time its
// admission requires) still fit in the time available, and when they do not
// it stops at once rather than sleeping toward a deadline it cannot meet.
// Other retry libraries (failsafe-go, cenkalti/backoff, go-retryablehttp,
// grpc-go) sleep first and find out afterwards.
//
// The zero value is ready to use: up to DefaultMaxAttempts attempts, an
// exponential backoff from DefaultBackoff doubling up to DefaultMaxBackoff
// with ±20 % jitter, no retry budget, and every error retried that the rules
// of [Retry.Do] allow. A Retry holds configuration only; it is safe for
// concurrent use as long as its fields are not changed.
type Retry struct {
	// MaxAttempts bounds the attempts of one call, the first included. Zero
	// means DefaultMaxAttempts; one disables retries.
	MaxAttempts int
	// Backoff is the wait before the first retry; each later retry waits
	// Multiplier times longer, up to MaxBackoff. Zero means DefaultBackoff;
	// a negative value retries at once, without waiting.
	Backoff time.Duration
	// MaxBackoff caps the wait before jitter. Zero means DefaultMaxBackoff.
	MaxBackoff time.Duration
	// Multiplier is the growth of the wait per retry. Zero (or anything
	// below 1) means DefaultMultiplier.
	Multiplier float64
	// Jitter spreads each wait uniformly over ±Jitter of its nominal value,
	// so that clients that failed together do not retry together. Zero means
	// DefaultJitter; a negative value means none; values above 1 count as 1.
	Jitter float64
	// Budget, when not nil, is the retry budget shared by every call of the
	// client: each call deposits into it and each retry withdraws from it,
	// and a retry it refuses is not made. Nil means no retry budget.
	Budget *RetryBudget
	// Retryable, when not nil, decides whether an attempt's error may be
	// retried, after the rules no policy overrides (see [Retry.Do]). Nil
	// retries every error those rules allow.
	Retryable func(err error) bool
}

var zeroRetry Retry

// Do runs fn as attempts of op within ctx's budget until one succeeds, and
// returns nil or the reason it stopped. Each attempt goes through op's
// admission and gets the deadline min(now+op.Cap, deadline-reserve), like
// [Op.Do]; its context also carries its number (see [AttemptNumber]).
//
// After a failed attempt, Do stops and returns the attempt's error when:
// ctx is done (the caller's budget expired or the caller gave up); the
// attempt ran out of the request's budget, not just op.Cap (our own deadline
// is final: the next attempt would have less); the error is marked
// [Permanent] or matches [ErrInsufficient] (work inside fn was refused for
// lack of time); Retryable says no; or MaxAttempts were made.
//
// Otherwise it computes the wait: the jittered backoff, or the pushback the
// error carries (see [RetryAfter]). When the wait plus op.MinUseful does not
// fit in the time available (remaining less reserve), or op's admission
// would refuse an attempt with the time left after the wait, Do returns at
// once, without sleeping, an [*Error] of Kind [Insufficient] (matching
// [ErrInsufficient]) that names op and wraps the last attempt's error. When
// the retry budget is spent it returns an [*Error] of Kind [RetrySuppressed]
// that wraps the last error too. Both are recorded as [EventRetrySuppressed],
// and waits as [EventBackoff]. A caller that gives up during a wait gets an
// error that wraps both its context's cause and the last error.
//
// A nil r behaves as the zero Retry. Do allocates what the attempts need (an
// attempt context and its number, about 5 allocations each) and nothing per
// retry decision.
func (r *Retry) Do(ctx context.Context, op *Op, fn func(ctx context.Context) error) error {
	if r == nil {
		r = &zeroRetry
	}
	if op == nil || fn == nil {
		return misconfigured("Retry.Do needs an Op and a function")
	}
	st := stateOf(ctx)
	if r.Budget != nil {
		r.Budget.Deposit(time.Now())
	}
	var last error
	for n := 1; ; n++ {
		if n > 1 {
			if err := r.beforeRetry(ctx, st, op, n, last); err != nil {
				return err
			}
		}
		called := false
		var cause error
		err := op.attempt(ctx, n, func(actx context.Context) error {
			called = true
			err := fn(withAttemptNumber(actx, n))
			if err != nil && actx.Err() != nil {
				cause = context.Cause(actx)
			}
			return err
		})
		if err == nil {
			return nil
		}
		if !called {
			// Refused by admission, or ctx ended before the attempt began:
			// keep the last real error inside the refusal.
			var be *Error
			if last != nil && errors.As(err, &be) && be.Err == nil {
				cp := *be
				cp.Err = last
				return &cp
			}
			return err
		}
		last = err
		if n >= r.maxAttempts() || !r.retryable(ctx, err, cause) {
			return err
		}
	}
}

// RetryCall is [Retry.Do] for a function that returns a value: it returns the
// value of the attempt that succeeded.
func RetryCall[T any](ctx context.Context, r *Retry, op *Op, fn func(ctx context.Context) (T, error)) (T, error) {
	var v T
	if fn == nil {
		return v, misconfigured("RetryCall needs a function")
	}
	err := r.Do(ctx, op, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	})
	return v, err
}

// beforeRetry decides whether attempt n may start and waits for it. It
// returns nil when the attempt should start, or the error that ends the loop.
func (r *Retry) beforeRetry(ctx context.Context, st *state, op *Op, n int, last error) error {
	now := time.Now()
	wait, ok := pushback(last)
	if !ok {
		wait = r.backoff(n - 1)
	}
	remaining, available := time.Duration(0), noDeadline
	if dl, has := ctx.Deadline(); has {
		remaining = dl.Sub(now)
		available = remaining - st.reserveOrZero()
	}
	if available != noDeadline {
		// Asked with the present now: a snapshot of the op's estimate dated
		// in the future would be recomputed by every caller until then.
		if dec := op.Decide(now, available-wait); !dec.Admit {
			err := &Error{Stage: op.Name, Kind: Insufficient, Remaining: available,
				Needed: wait + max(dec.Needed, op.MinUseful), Budget: st.budget(), Err: last}
			emit(ctx, st, op.Observer, Event{Kind: EventRetrySuppressed, Stage: op.Name, At: now,
				Remaining: remaining, Needed: err.Needed, Outcome: "insufficient", Attempt: n, Err: err})
			return err
		}
	}
	if r.Budget != nil && !r.Budget.Withdraw(now) {
		err := &Error{Stage: op.Name, Kind: RetrySuppressed, Budget: st.budget(), Err: last}
		if available != noDeadline {
			err.Remaining = available
		}
		emit(ctx, st, op.Observer, Event{Kind: EventRetrySuppressed, Stage: op.Name, At: now,
			Remaining: remaining, Outcome: "retry_budget", Attempt: n, Err: err})
		return err
	}
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return fmt.Errorf("budget: %s retry abandoned: %w (last error: %w)", op.Name, context.Cause(ctx), last)
	}
	end := time.Now()
	emit(ctx, st, op.Observer, Event{Kind: EventBackoff, Stage: op.Name, At: now, Duration: end.Sub(now),
		Remaining: remaining, Attempt: n})
	return nil
}

func (r *Retry) maxAttempts() int {
	if r.MaxAttempts > 0 {
		return r.MaxAttempts
	}
	return DefaultMaxAttempts
}

// retryable applies the rules no policy overrides, then r.Retryable.
func (r *Retry) retryable(ctx context.Context, err, cause error) bool {
	switch {
	case ctx.Err() != nil, // the caller's budget expired, or the caller gave up
		errors.Is(cause, ErrBudgetExpired), // our deadline, less reserve, fired: the next attempt has less
		IsPermanent(err),
		errors.Is(err, ErrInsufficient),
		errors.Is(err, context.Canceled):
		return false
	}
	return r.Retryable == nil || r.Retryable(err)
}

// backoff returns the jittered wait before retry k (k = 1 for the first).
func (r *Retry) backoff(k int) time.Duration {
	base := r.Backoff
	switch {
	case base < 0:
		return 0
	case base == 0:
		base = DefaultBackoff
	}
	ceil := r.MaxBackoff
	if ceil <= 0 {
		ceil = DefaultMaxBackoff
	}
	mult := r.Multiplier
	if mult < 1 {
		mult = DefaultMultiplier
	}
	d := min(float64(base)*math.Pow(mult, float64(k-1)), float64(ceil))
	j := r.Jitter
	switch {
	case j == 0:
		j = DefaultJitter
	case j > 1:
		j = 1
	}
	if j > 0 {
		d *= 1 + j*(2*rand.Float64()-1)
	}
	return time.Duration(d)
}

type attemptKey struct{}

// withAttemptNumber returns ctx marked as attempt n.
func withAttemptNumber(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, attemptKey{}, n)
}

// AttemptNumber returns the number of the attempt ctx belongs to, counted
// from 1 within a [Retry] loop or a [Hedge] (the hedge is attempt 2), so that
// the wire layer can tell a server which attempt it sees (as gRPC's
// grpc-previous-rpc-attempts and Envoy's x-envoy-attempt-count do) and a
// server can see a retry storm. It returns 0 when ctx belongs to no such
// attempt, which callers should treat as a first attempt. It costs one
// context value lookup.
func AttemptNumber(ctx context.Context) int {
	n, _ := ctx.Value(attemptKey{}).(int)
	return n
}
