package budget

import (
	"context"
	"errors"
	"time"
)

// Attempt derives the context for one attempt of stage: its deadline is
// min(now+limit, deadline-reserve), where limit is the local cap of the call
// (zero or less for none). When that leaves minUseful or less, the attempt is
// refused: Attempt returns ctx itself, a no-op cancel and an [*Error] matching
// [ErrInsufficient], and the work must not start. When ctx is already done it
// returns an error matching [context.DeadlineExceeded] (or ctx's error when
// it was canceled for another reason).
//
// Attempt is the building block for work that is not a call of a measured
// dependency, such as a step of an agent loop ([Steps] uses it). For a call
// of a dependency use [Op.Do]: it adds admission from measured latency and
// records how the attempt ended, which Attempt leaves to the caller.
//
// Once the attempt's deadline passes, context.Cause reports [ErrAttemptCap]
// when the local cap fired and [ErrExpired] when the budget did. Refusals are
// recorded in the ledger.
//
// Canceling the returned context releases resources associated with it, so code
// should call cancel as soon as the operations running in it complete.
func Attempt(ctx context.Context, stage string, limit, minUseful time.Duration) (context.Context, context.CancelFunc, error) {
	if err := ctx.Err(); err != nil {
		return ctx, func() {}, ended(ctx, read(ctx), nil, stage, 0)
	}
	r := read(ctx)
	if !r.hasDeadline && limit <= 0 {
		c, cancel := context.WithCancel(ctx)
		return c, cancel, nil
	}
	d, cause := r.available, ErrExpired
	if limit > 0 && limit < d {
		d, cause = limit, ErrAttemptCap
	}
	if d <= minUseful || d <= 0 {
		return ctx, func() {}, refuse(ctx, r, nil, stage, 0, minUseful)
	}
	c, cancel := context.WithDeadlineCause(ctx, r.now.Add(d), cause)
	return c, cancel, nil
}

// Refuse records that stage was not started at now because only left of the
// budget remained where needed was required, and returns the error to report:
// an [*Error] matching [ErrInsufficient]; or, when ctx is already done, one
// matching [context.DeadlineExceeded] when its deadline passed and
// [context.Canceled] when its caller gave up. Adapters call it when a request
// is not worth sending (httpbudget's Transport, grpcbudget's client
// interceptors); the refusal goes to ctx's ledger and observer like any
// other.
func Refuse(ctx context.Context, stage string, now time.Time, left, needed time.Duration) error {
	r := reading{st: stateOf(ctx), now: now, available: left}
	if dl, ok := ctx.Deadline(); ok {
		r.remaining, r.hasDeadline = dl.Sub(now), true
	}
	if ctx.Err() != nil {
		return ended(ctx, r, nil, stage, 0)
	}
	return refuse(ctx, r, nil, stage, 0, needed)
}

// refuse records that stage was not started, for lack of time, and returns
// the error matching [ErrInsufficient] that says so.
func refuse(ctx context.Context, r reading, extra Observer, stage string, n int, needed time.Duration) error {
	err := &Error{Stage: stage, Outcome: OutcomeInsufficient, Remaining: r.remaining, Available: r.available, Needed: needed, Budget: r.st.budget()}
	emit(ctx, r.st, extra, Event{Kind: EventRefuse, Stage: stage, At: r.now, Remaining: r.remaining,
		Needed: needed, Outcome: OutcomeInsufficient, Attempt: n, Err: err})
	return err
}

// ended records that stage could not start because ctx was already done, and
// returns the error that says so: an expiry when its deadline passed, a
// cancellation otherwise. Both are [*Error]s that wrap ctx's error.
func ended(ctx context.Context, r reading, extra Observer, stage string, n int) error {
	e := &Error{Stage: stage, Outcome: OutcomeCanceled, Budget: r.st.budget(), Err: ctx.Err()}
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		e.Outcome = OutcomeExpired
	}
	if dl, ok := ctx.Deadline(); ok {
		e.Remaining = dl.Sub(r.now)
	}
	emit(ctx, r.st, extra, Event{Kind: EventRefuse, Stage: stage, At: r.now, Remaining: e.Remaining,
		Outcome: e.Outcome, Attempt: n, Err: e})
	return e
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
