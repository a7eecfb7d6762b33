package budget

import (
	"context"
	"errors"
	"strconv"
)

// Sent says how far a failed attempt got before it failed, as far as the
// client can know: whether the request left, whether the server refused it
// before starting work, and whether the work may have run. [Retry] reads it
// to avoid repeating work that may already have happened (a payment, an
// email, an order): see [Retry.Do]. The names follow gRPC's distinction
// (gRFC A6) between a call that never left the client, one the server saw
// but did not start, and one the application may have seen.
//
// Adapters classify the errors they return (httpbudget's Transport does;
// see its doc): either by wrapping them with [MarkSent], or by giving their
// error types a method Sent() Sent, which [SentOf] finds with errors.As
// anywhere in the chain. Successful attempts carry nothing, so the
// classification costs nothing on success. The zero value means
// "unclassified": an error without a classification is retried as it was
// before classifications existed.
type Sent uint8

// How far an attempt got. Each later value says the work got further.
const (
	// NotSent: the request never left this process, or the connection was
	// refused before the request was written. Safe to retry.
	NotSent Sent = iota + 1
	// ServerRefused: the server answered that it refused the request
	// before starting any work (a refusal on arrival). Safe to retry.
	ServerRefused
	// MaybeExecuted: the request was written and the deadline or the
	// connection ended before an answer came. The work may have run, or
	// may be running still.
	MaybeExecuted
	// Executed: the server answered, with any status. Whether a retry is
	// worth it depends on the answer, which the caller's Retryable judges.
	Executed
)

var sentNames = [...]string{
	0:             "unclassified",
	NotSent:       "not_sent",
	ServerRefused: "server_refused",
	MaybeExecuted: "maybe_executed",
	Executed:      "executed",
}

// String returns the lower-case label of s, such as "maybe_executed", or
// "unclassified" for the zero value.
func (s Sent) String() string {
	if int(s) < len(sentNames) {
		return sentNames[s]
	}
	return "sent(" + strconv.Itoa(int(s)) + ")"
}

// MarkSent returns err marked as the error of an attempt that got as far as
// s. The result's message is err's, and errors.Is and errors.As reach err.
// A nil err returns nil, and so does an invalid s (outside NotSent to
// Executed) return err unchanged. It costs one allocation, only on failure.
//
// Use it in an adapter, or in the function a [Retry] runs, to say what a
// transport error means: for instance an error built from an HTTP 500
// answer is Executed, so that a timeout's classification further down the
// chain does not count. The outermost classification in a chain wins.
func MarkSent(err error, s Sent) error {
	if err == nil || s < NotSent || s > Executed {
		return err
	}
	return &sentError{err: err, sent: s}
}

type sentError struct {
	err  error
	sent Sent
}

func (e *sentError) Error() string { return e.err.Error() }
func (e *sentError) Unwrap() error { return e.err }
func (e *sentError) Sent() Sent    { return e.sent }

// SentOf returns how far the attempt that returned err got, and true; or
// false when nothing in err's chain classifies it (see [Sent]). The first
// error in the chain, as errors.As walks it, with a method Sent() Sent that
// returns a valid value decides.
func SentOf(err error) (Sent, bool) {
	var c interface{ Sent() Sent }
	if err == nil || !errors.As(err, &c) {
		return 0, false
	}
	s := c.Sent()
	return s, s >= NotSent && s <= Executed
}

// mayRetryUncertain reports whether a retry of an attempt that ended with
// err may be made as far as duplicates go: always, unless err says the work
// may have run (MaybeExecuted) and the call is neither declared idempotent
// (idempotent), nor carries an idempotency key in ctx, nor says through err
// that it is idempotent by its protocol's rules (a method Idempotent() bool,
// as httpbudget's errors have for GET requests).
func mayRetryUncertain(ctx context.Context, err error, idempotent bool) bool {
	if s, ok := SentOf(err); !ok || s != MaybeExecuted || idempotent {
		return true
	}
	if _, ok := IdempotencyKeyFrom(ctx); ok {
		return true
	}
	var i interface{ Idempotent() bool }
	return errors.As(err, &i) && i.Idempotent()
}

// DoNotRetry returns err marked as the answer of a server that asked its
// caller not to retry, as an adapter's client reports it: the server shed
// the request on arrival (s is [ServerRefused]: nothing ran), or it ran the
// request and gave up after retrying its own dependency (s is [Executed]).
// [Retry] returns such an error at once, without another attempt, since
// retries happen at the hop nearest the failure (see [Retry.Do]); the error
// is [Permanent], classified s ([SentOf]), and reports [GaveUp] true, so
// that a server whose handler fails with it asks its own caller not to
// retry either. Its message is err's followed by why it was not retried.
// errors.Is and errors.As reach err. A nil err returns nil; an s outside
// NotSent to Executed counts as Executed. It costs one allocation.
func DoNotRetry(err error, s Sent) error {
	if err == nil {
		return nil
	}
	if s < NotSent || s > Executed {
		s = Executed
	}
	return &noRetryError{err: err, sent: s}
}

type noRetryError struct {
	err  error
	sent Sent
}

func (e *noRetryError) Error() string {
	if e.sent <= ServerRefused {
		return e.err.Error() + " (not retried: the server refused it on arrival and asked not to retry)"
	}
	return e.err.Error() + " (not retried: the server gave up after its own retries and asked not to retry)"
}
func (e *noRetryError) Unwrap() error   { return e.err }
func (e *noRetryError) Sent() Sent      { return e.sent }
func (e *noRetryError) Permanent() bool { return true }
func (e *noRetryError) GaveUp() bool    { return true }

// GaveUp reports whether err says that retrying the call again, one hop up,
// would multiply the load for nothing: it comes from a [Retry] that stopped
// after it had a chance to retry (it made MaxAttempts attempts, more than
// one; or it did not make a retry for lack of time, of retry quota, or
// because the attempt may have run, [OutcomeUncertain]), or anything in its
// chain was marked with [DoNotRetry] or has a method GaveUp() bool that
// returns true. A server answers such an error with its protocol's "do not
// retry" marker (httpbudget's WriteError stamps Budget-No-Retry: retried),
// so that retries happen at the hop nearest the failure. A Retry that
// stopped on its first attempt for another reason (a [Permanent] error,
// Retryable said no, the budget ran out) has not given up in this sense:
// its error reports false, and so does nil. It does not allocate.
func GaveUp(err error) bool {
	for err != nil {
		switch e := err.(type) {
		case interface{ GaveUp() bool }:
			if e.GaveUp() {
				return true
			}
		case *Error:
			if e.gaveUp {
				return true
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if GaveUp(e) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// gaveUpError is the last attempt's error of a Retry that made all its
// attempts: the message and chain are err's, and GaveUp reports true.
type gaveUpError struct{ err error }

func (e *gaveUpError) Error() string { return e.err.Error() }
func (e *gaveUpError) Unwrap() error { return e.err }
func (e *gaveUpError) GaveUp() bool  { return true }
