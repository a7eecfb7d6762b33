package budget

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrInsufficient is matched (with errors.Is) by every error that reports work
// refused before it started because the time left could not cover it. It does
// not match [context.DeadlineExceeded]: nothing expired, a shortfall was
// predicted, and the caller may still have time for a cheaper alternative.
var ErrInsufficient = errors.New("budget: too little time left")

// ErrMisconfigured is matched by the error returned when a call cannot be
// made as configured: a nil [Op], a nil function, a ladder without rungs. The
// error says what is missing; nothing was started.
var ErrMisconfigured = errors.New("budget: misconfigured")

// misconfigured returns an error matching ErrMisconfigured that says what.
func misconfigured(what string) error {
	return fmt.Errorf("%w: %s", ErrMisconfigured, what)
}

// Error reports a budget refusal or expiry. Its message states the fact and
// the stage for a reader ("budget: geometry not started: too little time
// left"); the numbers are fields, for logs and metrics.
//
// Use errors.Is(err, [ErrInsufficient]) or errors.Is(err,
// [context.DeadlineExceeded]) to branch, and errors.As to reach the fields.
// When the error ends a retry loop, Err holds the last real error of the
// attempts, and errors.Is and errors.As reach it too.
type Error struct {
	// Stage names the operation or step that was refused or ran out of time,
	// such as an [Op] name or "request".
	Stage string
	// Outcome says why the work did not complete: OutcomeInsufficient,
	// OutcomeShed, OutcomeRetrySuppressed or OutcomeThrottled when it was
	// refused before starting, OutcomeExpired when it ran out of time,
	// OutcomeCanceled when the caller gave up before it could start,
	// OutcomeLimit when a [Steps] loop reached its bound, and
	// OutcomeUncertain when a [Retry] did not retry an attempt that may
	// have run (see [Sent]).
	Outcome Outcome
	// Remaining is the time that was left before the deadline when the
	// decision was made, before the reserve, as [Remaining] and
	// [Reading].Remaining state it. It is negative or zero for an expiry.
	Remaining time.Duration
	// Available is Remaining less the reserve held back with [WithReserve]:
	// the time the work could use, which the decision weighed.
	Available time.Duration
	// Needed is what the work was estimated to need (zero when unknown).
	Needed time.Duration
	// Budget is the whole budget of the request (zero when unknown).
	Budget time.Duration
	// Err is the underlying error: the last attempt's error of a retry loop,
	// or the error the work returned when it expired. It may be nil.
	Err error

	// gaveUp says a Retry stopped here after it had a chance to retry
	// (see [GaveUp]).
	gaveUp bool
}

// Error returns a short sentence naming the stage and the fact. A nil *Error
// (reached only through a careless typed nil) says so rather than panicking.
func (e *Error) Error() string {
	if e == nil {
		return "budget: <nil *Error>"
	}
	var b strings.Builder
	b.WriteString("budget: ")
	stage := e.Stage
	if stage == "" {
		stage = "work"
	}
	b.WriteString(stage)
	switch e.Outcome {
	case OutcomeInsufficient:
		b.WriteString(" not started: too little time left")
	case OutcomeShed:
		if e.Err == errLoadShed {
			b.WriteString(" not started: shed under load for its criticality")
			return b.String()
		}
		b.WriteString(" refused on arrival: too little time left")
	case OutcomeRetrySuppressed:
		b.WriteString(" not retried: retry quota spent")
	case OutcomeUncertain:
		b.WriteString(" not retried: it may have run, and it is neither idempotent nor keyed")
	case OutcomeCanceled:
		b.WriteString(" not started: the caller gave up")
	case OutcomeThrottled:
		b.WriteString(" not started: it keeps failing")
	default:
		b.WriteString(" did not complete in the time available")
	}
	if e.Err != nil && !isBareContextErr(e.Err) {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func isBareContextErr(err error) bool {
	return err == context.DeadlineExceeded || err == context.Canceled
}

// Is reports whether target is [ErrInsufficient] (for refusals for lack of
// time: insufficient or shed), [context.DeadlineExceeded] (for expiries) or
// [context.Canceled] (when the caller gave up).
func (e *Error) Is(target error) bool {
	if e == nil {
		return false
	}
	switch target {
	case ErrInsufficient:
		return e.Outcome == OutcomeInsufficient || e.Outcome == OutcomeShed
	case context.DeadlineExceeded:
		return e.Outcome == OutcomeExpired
	case context.Canceled:
		return e.Outcome == OutcomeCanceled
	}
	return false
}

// Unwrap returns the underlying error, so errors.Is and errors.As reach the
// last real error of a retry loop.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Timeout reports whether the error is an expiry, for code that checks the
// net.Error-style Timeout method.
func (e *Error) Timeout() bool { return e != nil && e.Outcome == OutcomeExpired }

// Cause values are what context.Cause returns for a context derived by this
// package once its deadline has passed. They tell apart "the request budget ran
// out" from "this attempt's local cap fired". Both match
// [context.DeadlineExceeded].
var (
	// ErrExpired is the cause when the request's budget (less any
	// reserve) ran out.
	ErrExpired error = causeError("budget: request budget ran out")
	// ErrAttemptCap is the cause when an attempt's local cap fired before the
	// request's budget ran out.
	ErrAttemptCap error = causeError("budget: attempt cap reached")
)

type causeError string

func (c causeError) Error() string { return string(c) }

func (c causeError) Is(target error) bool { return target == context.DeadlineExceeded }

// Timeout reports true: a cause is always a timeout.
func (c causeError) Timeout() bool { return true }
