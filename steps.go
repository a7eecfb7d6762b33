package budget

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// DefaultMaxSteps bounds the iterations of a [Steps] loop whose Max is zero.
const DefaultMaxSteps = 100

// ErrStepLimit is returned by [Steps.Run] when the loop made Max steps
// without finishing.
var ErrStepLimit = errors.New("budget: step limit reached")

// StopReason says why a [Steps] loop stopped.
type StopReason uint8

// Why a loop stops.
const (
	StopDone     StopReason = iota + 1 // a step reported the work finished
	StopBudget                         // too little time left for another step: a partial result
	StopExpired                        // a step ran out of time (its Cap, or the budget)
	StopMaxSteps                       // the iteration bound was reached
	StopFailed                         // a step returned an error of its own
	StopCanceled                       // the caller gave up
)

var stopNames = [...]string{"", "done", "budget exhausted", "deadline exceeded", "step limit", "step failed", "canceled"}

// String returns the reason in words, such as "budget exhausted".
func (r StopReason) String() string {
	if r > 0 && int(r) < len(stopNames) {
		return stopNames[r]
	}
	return "stop reason(" + strconv.Itoa(int(r)) + ")"
}

// Steps is a step loop for agent-style work: a model decides the next step,
// a tool runs it, and so on until the work is done. Latency per step is high
// and variable, and the number of steps is not known in advance, so the loop
// spends the request's budget: each step's timeout is min(Cap, remaining less
// reserve), and the loop stops with a partial result and a reason as soon as
// the time available is at or below Min, instead of starting a step it cannot
// finish. Max bounds the iterations whatever the clock says, which also bounds
// the spend on a paid model.
//
// The zero value is usable: no per-step cap, a stop when nothing is left, and
// at most DefaultMaxSteps steps. A Steps holds configuration only and is safe
// for concurrent use.
type Steps struct {
	// Stage names the loop's steps in the ledger and errors. Empty means
	// "step".
	Stage string
	// Cap bounds one step. Zero means no cap: a step may use all the time
	// available.
	Cap time.Duration
	// Min is the minimum step: the loop stops when the time available is at
	// or below it. Zero stops only when nothing is left. Keep it below Cap:
	// a step capped at or below the minimum is never started.
	Min time.Duration
	// Max bounds the number of steps. Zero (or less) means DefaultMaxSteps.
	Max int
}

// StepsResult says how far a [Steps] loop got and why it stopped.
type StepsResult struct {
	// Steps is the number of steps that ran, the last included.
	Steps int
	// Reason says why the loop stopped.
	Reason StopReason
}

// Run calls step with n = 1, 2, ... until it reports done, fails, or the loop
// must stop. Each call gets a context from [Attempt]: its deadline is
// min(now+Cap, deadline-reserve). The partial result is whatever step has
// accumulated in the caller's own variables; the result says how many steps
// ran and why the loop stopped. The error is nil only for StopDone; it is an
// [*Error] matching [ErrInsufficient] for StopBudget (the time available was
// at or below the minimum step), an [*Error] matching
// [context.DeadlineExceeded] and wrapping step's error for StopExpired,
// [ErrStepLimit] for StopMaxSteps, step's error for StopFailed, and the
// caller's context error for StopCanceled. Each step is recorded in the
// ledger as an [EventAttempt] numbered n; a refusal as an [EventRefuse].
func (s Steps) Run(ctx context.Context, step func(ctx context.Context, n int) (done bool, err error)) (StepsResult, error) {
	if step == nil {
		return StepsResult{}, misconfigured("Steps.Run needs a step function")
	}
	stage := s.Stage
	if stage == "" {
		stage = "step"
	}
	limit := s.Max
	if limit <= 0 {
		limit = DefaultMaxSteps
	}
	st := stateOf(ctx)
	for n := 1; ; n++ {
		if n > limit {
			return StepsResult{Steps: n - 1, Reason: StopMaxSteps}, ErrStepLimit
		}
		actx, cancel, err := Attempt(ctx, stage, s.Cap, s.Min)
		if err != nil {
			cancel()
			reason := StopCanceled
			switch {
			case errors.Is(err, ErrInsufficient):
				reason = StopBudget
			case errors.Is(err, context.DeadlineExceeded):
				reason = StopExpired
			}
			return StepsResult{Steps: n - 1, Reason: reason}, err
		}
		start := time.Now()
		remaining := time.Duration(0)
		if dl, ok := ctx.Deadline(); ok {
			remaining = dl.Sub(start)
		}
		done, err := step(actx, n)
		outcome, timedOut := OutcomeOK, false
		if err != nil {
			outcome = OutcomeError
			if actx.Err() != nil {
				timedOut = errors.Is(context.Cause(actx), context.DeadlineExceeded)
				outcome = OutcomeCanceled
				if timedOut {
					outcome = OutcomeTimeout
				}
			}
		}
		cancel()
		emit(ctx, st, nil, Event{Kind: EventAttempt, Stage: stage, At: start, Duration: time.Since(start),
			Remaining: remaining, Outcome: outcome, Attempt: n, Err: err})
		switch {
		case err == nil && done:
			return StepsResult{Steps: n, Reason: StopDone}, nil
		case err == nil:
			continue
		case ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded):
			return StepsResult{Steps: n, Reason: StopCanceled}, err
		case timedOut:
			return StepsResult{Steps: n, Reason: StopExpired}, &Error{Stage: stage, Kind: Expired,
				Remaining: remaining - st.reserveOrZero() - time.Since(start), Budget: st.budget(), Err: err}
		}
		return StepsResult{Steps: n, Reason: StopFailed}, err
	}
}
