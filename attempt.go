package budget

import (
	"context"
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
// Once the attempt's deadline passes, context.Cause reports [ErrAttemptCap]
// when the local cap fired and [ErrBudgetExpired] when the budget did.
// Refusals are recorded in the ledger; the attempt's own end is the caller's
// to record (an [Op] does that for its attempts).
//
// Canceling the returned context releases resources associated with it, so code
// should call cancel as soon as the operations running in it complete.
func Attempt(ctx context.Context, stage string, limit, minUseful time.Duration) (context.Context, context.CancelFunc, error) {
	now := time.Now()
	st := stateOf(ctx)
	if err := ctx.Err(); err != nil {
		return ctx, func() {}, ended(ctx, st, nil, stage, now, 0, err)
	}
	dl, hasDeadline := ctx.Deadline()
	if !hasDeadline && limit <= 0 {
		c, cancel := context.WithCancel(ctx)
		return c, cancel, nil
	}
	available, cause := noDeadline, ErrAttemptCap
	remaining := time.Duration(0)
	if hasDeadline {
		remaining = dl.Sub(now)
		available = remaining - st.reserveOrZero()
	}
	attempt := available
	if limit > 0 && limit < attempt {
		attempt = limit
	} else {
		cause = ErrBudgetExpired
	}
	if attempt <= minUseful || attempt <= 0 {
		err := &Error{Stage: stage, Kind: Insufficient, Remaining: available, Needed: minUseful, Budget: st.budget()}
		emit(ctx, st, nil, Event{Kind: EventRefuse, Stage: stage, At: now, Remaining: remaining,
			Needed: minUseful, Outcome: "insufficient", Err: err})
		return ctx, func() {}, err
	}
	c, cancel := context.WithDeadlineCause(ctx, now.Add(attempt), cause)
	return c, cancel, nil
}

func (st *state) reserveOrZero() time.Duration {
	if st == nil {
		return 0
	}
	return st.reserve
}

// Refuse records that stage was not started at now because only left of the
// budget remained where needed was required, and returns the error to report:
// an [*Error] matching [ErrInsufficient], or, when ctx is already done, one
// matching [context.DeadlineExceeded]. Adapters call it when a request is not
// worth sending (httpbudget's Transport, grpcbudget's client interceptors);
// the refusal goes to ctx's ledger and observer like any other.
func Refuse(ctx context.Context, stage string, now time.Time, left, needed time.Duration) error {
	err := &Error{Stage: stage, Kind: Insufficient, Remaining: left, Needed: needed}
	st := stateOf(ctx)
	err.Budget = st.budget()
	if ctx.Err() != nil {
		err.Kind, err.Err = Expired, ctx.Err()
	}
	remaining := time.Duration(0)
	if dl, ok := ctx.Deadline(); ok {
		remaining = dl.Sub(now)
	}
	emit(ctx, st, nil, Event{Kind: EventRefuse, Stage: stage, At: now, Remaining: remaining,
		Needed: needed, Outcome: "insufficient", Err: err})
	return err
}
