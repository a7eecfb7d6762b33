package budget

import (
	"context"
	"errors"
	"strconv"
)

// Outcome says how a piece of work ended, or why it never started. It is the
// one vocabulary of the package: an [Error], an [Event], a ladder rung
// ([RungReport]), a fan-out branch ([BranchResult]) and a step loop
// ([StepsResult]) all report an Outcome, and its String form is the label
// used in the ledger, in logs and in metrics.
//
// Four words carry the ideas a reader meets most:
//
//   - expired: the deadline passed while the work ran (or before it could
//     start). Matches [context.DeadlineExceeded].
//   - insufficient: refused before starting, because the time left could not
//     cover it. Matches [ErrInsufficient], not [context.DeadlineExceeded].
//   - shed: refused on arrival by an inbound policy, or shed by a queue under
//     load. Matches [ErrInsufficient].
//   - canceled: the caller gave up. Matches [context.Canceled].
type Outcome uint8

// The outcomes. The zero value, OutcomeNone, is the outcome of an instant
// event and of work that was never reached.
const (
	OutcomeNone            Outcome = iota // nothing to report: an instant, or work never reached
	OutcomeOK                             // the work succeeded
	OutcomeFailed                         // the work failed for a reason other than time
	OutcomeExpired                        // the deadline passed while the work ran, or before it could start
	OutcomeCanceled                       // the caller gave up
	OutcomeInsufficient                   // refused before starting: too little time left
	OutcomeShed                           // refused on arrival by an inbound policy, shed by a queue under load, or by an op for its criticality
	OutcomeRetrySuppressed                // a retry or hedge was not made: the retry quota was spent
	OutcomeLimit                          // stopped by an iteration bound (see [Steps])
	OutcomeThrottled                      // refused locally because the dependency keeps failing (see [Op])
	OutcomeUncertain                      // a retry was not made: the attempt may have run, and the call is neither idempotent nor keyed (see [Sent])
)

var outcomeNames = [...]string{
	OutcomeNone:            "none",
	OutcomeOK:              "ok",
	OutcomeFailed:          "failed",
	OutcomeExpired:         "expired",
	OutcomeCanceled:        "canceled",
	OutcomeInsufficient:    "insufficient",
	OutcomeShed:            "shed",
	OutcomeRetrySuppressed: "retry_suppressed",
	OutcomeLimit:           "limit",
	OutcomeThrottled:       "throttled",
	OutcomeUncertain:       "uncertain",
}

// String returns the outcome's lower-case label, such as "expired" or
// "retry_suppressed".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// classify says how an attempt that ran in actx (derived from the caller's
// context) ended with err. An error from the work that itself matches
// [context.DeadlineExceeded] while actx is still live counts as expired: the
// callee ran out of the budget it was sent (an upstream 504 with
// Budget-Expired, a gRPC DEADLINE_EXCEEDED) a moment before our own deadline.
// timeout, when not nil, classifies further errors as expiries (a database's
// own statement timeout, for one).
func classify(actx context.Context, err error, timeout func(error) bool) Outcome {
	switch {
	case err == nil:
		return OutcomeOK
	case actx.Err() != nil && errors.Is(context.Cause(actx), context.DeadlineExceeded):
		return OutcomeExpired
	case actx.Err() != nil:
		return OutcomeCanceled
	case errors.Is(err, context.DeadlineExceeded), timeout != nil && timeout(err):
		return OutcomeExpired
	}
	return OutcomeFailed
}
