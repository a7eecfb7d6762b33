package budget

import (
	"context"
	"errors"
	"time"
)

// defaultMaxSteps bounds the iterations of a [Steps] loop whose Max is zero.
const defaultMaxSteps = 100

// ErrStepLimit is returned by [Steps.Run] when the loop made Max steps
// without finishing.
var ErrStepLimit = errors.New("budget: step limit reached")

// Steps is a step loop for agent-style work: a model decides the next step,
// a tool runs it, and so on until the work is done. Latency per step is high
// and variable, and the number of steps is not known in advance, so the loop
// spends the request's budget: each step's timeout is min(Cap, remaining less
// reserve), and the loop stops with a partial result and a reason as soon as
// the time available is at or below MinUseful, instead of starting a step it
// cannot finish. Max bounds the iterations whatever the clock says, which also bounds
// the spend on a paid model.
//
// The zero value is usable: no per-step cap, a stop when nothing is left, and
// at most 100 steps. A Steps holds configuration only and is safe
// for concurrent use.
type Steps struct {
	// Stage names the loop's steps in the ledger and errors. Empty means
	// "step".
	Stage string
	// Cap bounds one step. Zero means no cap: a step may use all the time
	// available.
	Cap time.Duration
	// MinUseful is the least time worth starting a step with: the loop stops
	// when the time available is at or below it. Zero stops only when
	// nothing is left. Keep it below Cap: a step capped at or below it is
	// never started.
	MinUseful time.Duration
	// Max bounds the number of steps. Zero (or less) means 100.
	Max int
}

// StepsResult says how far a [Steps] loop got and why it stopped.
type StepsResult struct {
	// Steps is the number of steps that ran, the last included.
	Steps int
	// Outcome says why the loop stopped: [OutcomeOK] when a step reported
	// the work done, [OutcomeInsufficient] when too little time was left for
	// another step (a partial result), [OutcomeExpired] when a step ran out
	// of time, [OutcomeLimit] when Max steps were made, [OutcomeFailed] when
	// a step returned an error of its own, [OutcomeCanceled] when the caller
	// gave up.
	Outcome Outcome
}

// Run calls step with n = 1, 2, ... until it reports done, fails, or the loop
// must stop. Each call gets a context from [Attempt]: its deadline is
// min(now+Cap, deadline-reserve). The partial result is whatever step has
// accumulated in the caller's own variables; the result says how many steps
// ran and why the loop stopped. The error is nil only for [OutcomeOK]; it is
// an [*Error] matching [ErrInsufficient] when the time available was at or
// below MinUseful, an [*Error] matching [context.DeadlineExceeded] and
// wrapping step's error when a step ran out of time, [ErrStepLimit] when Max
// steps were made, step's error when it failed, and an error matching the
// caller's context error when the caller gave up. Each step is recorded in
// the ledger as an [EventAttempt] numbered n; a refusal as an [EventRefuse].
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
		limit = defaultMaxSteps
	}
	for n := 1; ; n++ {
		if n > limit {
			return StepsResult{Steps: n - 1, Outcome: OutcomeLimit}, ErrStepLimit
		}
		actx, cancel, err := Attempt(ctx, stage, s.Cap, s.MinUseful)
		if err != nil {
			cancel()
			var be *Error
			errors.As(err, &be)
			return StepsResult{Steps: n - 1, Outcome: be.Outcome}, err
		}
		r := read(ctx)
		done, err := step(actx, n)
		outcome := classify(actx, err, nil)
		cancel()
		elapsed := time.Since(r.now)
		emit(ctx, r.st, nil, Event{Kind: EventAttempt, Stage: stage, At: r.now, Duration: elapsed,
			Remaining: r.remaining, Outcome: outcome, Attempt: n, Err: err})
		switch {
		case outcome == OutcomeOK && done:
			return StepsResult{Steps: n, Outcome: OutcomeOK}, nil
		case outcome == OutcomeOK:
			continue
		case ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded):
			return StepsResult{Steps: n, Outcome: OutcomeCanceled}, err
		case outcome == OutcomeExpired:
			return StepsResult{Steps: n, Outcome: OutcomeExpired}, &Error{Stage: stage, Outcome: OutcomeExpired,
				Remaining: r.remaining - elapsed, Available: r.available - elapsed, Budget: r.st.budget(), Err: err}
		}
		return StepsResult{Steps: n, Outcome: OutcomeFailed}, err
	}
}
