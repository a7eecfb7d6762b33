package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Defaults of a zero [Retry], stated in its field docs.
const (
	defaultMaxAttempts = 3
	defaultBackoff     = 100 * time.Millisecond
	defaultMaxBackoff  = 5 * time.Second
	defaultMultiplier  = 2.0
	defaultJitter      = 0.2 // the value gRPC uses
)

// Retry is a retry policy that spends the request's budget instead of
// ignoring it: before each retry it checks that the backoff plus the op's
// minimum useful time (and, once the op has measurements, the time its
// admission requires) still fit in the time available, and when they do not
// it stops at once rather than sleeping toward a deadline it cannot meet.
// Other retry libraries (failsafe-go, cenkalti/backoff, go-retryablehttp,
// grpc-go) sleep first and find out afterwards.
//
// The zero value is ready to use: up to 3 attempts, an exponential backoff
// from 100 ms doubling up to 5 s with ±20 % jitter, no retry quota, and every
// error retried that the rules
// of [Retry.Do] allow. A Retry holds configuration only; it is safe for
// concurrent use as long as its fields are not changed.
type Retry struct {
	// MaxAttempts bounds the attempts of one call, the first included. Zero
	// means 3; one disables retries.
	MaxAttempts int
	// Backoff is the wait before the first retry; each later retry waits
	// Multiplier times longer, up to MaxBackoff. Zero means 100 ms;
	// a negative value retries at once, without waiting.
	Backoff time.Duration
	// MaxBackoff caps the wait before jitter. Zero means 5 s.
	MaxBackoff time.Duration
	// Multiplier is the growth of the wait per retry. Zero (or anything
	// below 1) means 2.
	Multiplier float64
	// Jitter spreads each wait uniformly over ±Jitter of its nominal value,
	// so that clients that failed together do not retry together. Zero means
	// 0.2 (±20 %, the value gRPC uses); a negative value means none; values
	// above 1 count as 1.
	Jitter float64
	// Quota, when not nil, is the retry quota shared by every call of the
	// client: each call deposits into it and each retry withdraws from it,
	// and a retry it refuses is not made. Nil means no quota.
	Quota *RetryQuota
	// Retryable, when not nil, decides whether an attempt's error may be
	// retried, after the rules no policy overrides (see [Retry.Do]). Nil
	// retries every error those rules allow.
	Retryable func(err error) bool
	// Idempotent declares that running the call twice does no harm (a
	// read, a PUT of a whole value), so that an attempt that may have run
	// ([MaybeExecuted]) is retried like any other. False retries such an
	// attempt only when the call carries an idempotency key (see
	// [WithIdempotencyKey]) or its error says the request is idempotent by
	// its protocol's rules (an HTTP GET, HEAD, OPTIONS or TRACE through
	// httpbudget's Transport).
	Idempotent bool
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
// once, without sleeping, an [*Error] with [OutcomeInsufficient] (matching
// [ErrInsufficient]) that names op and wraps the last attempt's error. When
// the retry quota is spent it returns an [*Error] with
// [OutcomeRetrySuppressed] that wraps the last error too. Both are recorded
// as an [EventRefuse] numbered with the retry that was not made, and waits as
// [EventBackoff]. A caller that gives up during a wait gets an
// error that wraps both its context's cause and the last error.
//
// Retries never duplicate work by accident. An attempt whose error says it
// may have run ([SentOf] reports [MaybeExecuted]: the request was written,
// then the deadline or the connection ended before an answer) is retried
// only when r is Idempotent, ctx carries an idempotency key
// ([WithIdempotencyKey]), or the error reports a method Idempotent() bool
// that returns true; otherwise Do returns an [*Error] with
// [OutcomeUncertain] that wraps the attempt's error, recorded as an
// [EventRefuse] like the other suppressed retries. Attempts that were not
// sent ([NotSent]) or refused by the server before it started
// ([ServerRefused]) are retried as the rules above allow, and so are
// executed ones ([Executed]: Retryable judges the answer). An error that
// carries no classification (from a function that does not go through a
// classifying adapter) is retried as the rules above allow, as before
// classifications existed: wrap it with [MarkSent] to say otherwise.
//
// Retries happen at the hop nearest the failure. A server whose dependency
// failed after its own Retry tried (its error reports [GaveUp]: attempts
// spent, or a retry refused for lack of time or quota, or for an uncertain
// outcome) tells its callers so on the wire, and a server that sheds a
// request on arrival says that too; the adapters' clients mark such an
// answer with [DoNotRetry], which Do returns at once, without another
// attempt: it is Permanent, and its message says the server asked not to
// retry. So three hops that each allow three attempts make three calls at
// the bottom, not 27, and a [RetryQuota] at the hop nearest the failure
// bounds even those to a fraction of the requests. The error Do returns
// after MaxAttempts attempts (more than one) reports GaveUp true, with the
// last attempt's message.
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
	if r.Quota != nil {
		r.Quota.Deposit(time.Now())
	}
	var last error
	for n := 1; ; n++ {
		if n > 1 {
			if err := r.beforeRetry(ctx, op, n, last); err != nil {
				return err
			}
		}
		called := false
		var cause error
		err := op.run(ctx, runOpts{n: n}, func(actx context.Context) error {
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
				cp.Err, cp.gaveUp = last, true
				return &cp
			}
			return err
		}
		last = err
		if n >= r.maxAttempts() {
			return r.spent(ctx, n, err, cause)
		}
		if !r.retryable(ctx, err, cause) {
			return err
		}
		if !mayRetryUncertain(ctx, err, r.Idempotent) {
			return suppress(ctx, read(ctx), op, n+1, OutcomeUncertain, 0, err)
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
func (r *Retry) beforeRetry(ctx context.Context, op *Op, n int, last error) error {
	rd := read(ctx)
	now := rd.now
	wait, ok := pushback(last)
	if !ok {
		wait = r.backoff(n - 1)
	}
	if rd.hasDeadline {
		// Asked with the present now: a snapshot of the op's estimate dated
		// in the future would be recomputed by every caller until then.
		if dec := op.AdmitAt(now, Ask{Available: rd.available - wait, Criticality: CriticalityFrom(ctx)}); !dec.Admit {
			return suppress(ctx, rd, op, n, OutcomeInsufficient, wait+max(dec.Needed, op.MinUseful), last)
		}
	}
	if r.Quota != nil && !r.Quota.Withdraw(now) {
		return suppress(ctx, rd, op, n, OutcomeRetrySuppressed, 0, last)
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
	emit(ctx, rd.st, op.Observer, Event{Kind: EventBackoff, Stage: op.Name, At: now, Duration: end.Sub(now),
		Remaining: rd.remaining, Attempt: n})
	return nil
}

// suppress records that retry (or hedge) n of op was not made, for lack of
// time or of retry quota, or because the last attempt may have run (why
// says which), and returns the error that says so, wrapping the
// last attempt's error.
func suppress(ctx context.Context, rd reading, op *Op, n int, why Outcome, needed time.Duration, last error) error {
	err := &Error{Stage: op.Name, Outcome: why, Needed: needed, Budget: rd.st.budget(), Err: last, gaveUp: last != nil}
	if rd.hasDeadline {
		err.Remaining, err.Available = rd.remaining, rd.available
	}
	emit(ctx, rd.st, op.Observer, Event{Kind: EventRefuse, Stage: op.Name, At: rd.now,
		Remaining: rd.remaining, Needed: needed, Outcome: why, Attempt: n, Err: err})
	return err
}

// spent returns err, the error of attempt n, the last one MaxAttempts
// allows: marked as given up ([GaveUp]) after at least one retry, unless
// the rules no policy overrides would not have retried it anyway.
func (r *Retry) spent(ctx context.Context, n int, err, cause error) error {
	if n > 1 && r.retryable(ctx, err, cause) {
		return &gaveUpError{err}
	}
	return err
}

func (r *Retry) maxAttempts() int {
	if r.MaxAttempts > 0 {
		return r.MaxAttempts
	}
	return defaultMaxAttempts
}

// retryable applies the rules no policy overrides, then r.Retryable.
func (r *Retry) retryable(ctx context.Context, err, cause error) bool {
	switch {
	case ctx.Err() != nil, // the caller's budget expired, or the caller gave up
		errors.Is(cause, ErrExpired), // our deadline, less reserve, fired: the next attempt has less
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
		base = defaultBackoff
	}
	ceil := r.MaxBackoff
	if ceil <= 0 {
		ceil = defaultMaxBackoff
	}
	mult := r.Multiplier
	if mult < 1 {
		mult = defaultMultiplier
	}
	d := min(float64(base)*math.Pow(mult, float64(k-1)), float64(ceil))
	j := r.Jitter
	switch {
	case j == 0:
		j = defaultJitter
	case j > 1:
		j = 1
	}
	if j > 0 {
		d *= 1 + j*(2*rand.Float64()-1)
	}
	return time.Duration(d)
}
