package budget

import (
	"errors"
	"time"
)

// Pushback is implemented by errors that carry a server's request to wait
// before trying again: an HTTP Retry-After header, gRPC's
// grpc-retry-pushback-ms, a broker's back-off hint. RetryAfter returns the
// wait and true, or false when the error carries none. [Retry] finds it with
// errors.As anywhere in an attempt's error chain and waits exactly that long
// instead of its own backoff, but only when the wait still fits in the
// budget; otherwise it stops at once. [RetryAfter] wraps an error with one.
type Pushback interface {
	RetryAfter() (time.Duration, bool)
}

// RetryAfter returns err wrapped with a pushback of d: a [Retry] waits d
// (without jitter) before the next attempt, or stops at once when d does not
// fit in the time left. The result's message is err's, and errors.Is and
// errors.As reach err. A nil err returns nil; a negative d counts as zero.
// It costs one allocation.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &pushbackError{err: err, d: max(d, 0)}
}

type pushbackError struct {
	err error
	d   time.Duration
}

func (e *pushbackError) Error() string                     { return e.err.Error() }
func (e *pushbackError) Unwrap() error                     { return e.err }
func (e *pushbackError) RetryAfter() (time.Duration, bool) { return e.d, true }

// pushback returns the wait a server asked for in err's chain, if any.
func pushback(err error) (time.Duration, bool) {
	var p Pushback
	if err == nil || !errors.As(err, &p) {
		return 0, false
	}
	d, ok := p.RetryAfter()
	return max(d, 0), ok
}
