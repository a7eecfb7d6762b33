package budget

import (
	"context"
	"time"
)

// defaultHedgeQuantile is the latency quantile of the op after which a
// [Hedge] with a zero Quantile starts its second attempt.
const defaultHedgeQuantile = 0.95

// Hedge is a hedging policy: when the first attempt of a call has not
// answered by the time most calls have (the op's measured latency at
// Quantile), a second attempt starts beside it, and the first to succeed
// wins. That cuts the tail latency of a dependency whose slow calls are
// random, at the cost of a few extra requests, as in "The Tail at Scale".
//
// The second attempt starts only if it can finish (op's admission, in the
// time left less the reserve) and the retry quota, when one is set, allows
// it; hedges and retries draw on the same quota, so an outage cannot turn
// hedging into double load.
//
// A hedge is a second copy of a call that may be running already, so hedge
// only calls that are idempotent, or that carry an idempotency key
// ([WithIdempotencyKey]) toward a server that honours it: both copies then
// carry the same key, and the server runs the work once. The zero value is ready to use: it hedges at the
// op's 0.95 quantile once the op has enough measurements, and not at all
// before. A Hedge holds configuration only; it is safe for concurrent use
// as long as its fields are not changed.
type Hedge struct {
	// Quantile is the fraction of the op's calls that should have answered
	// before the second attempt starts, in (0, 1). Zero means 0.95.
	Quantile float64
	// Delay is the wait before the second attempt while the op has fewer
	// measurements than its MinSamples. Zero means no hedge until then.
	Delay time.Duration
	// Quota, when not nil, is the retry quota shared by the client: each
	// call deposits into it and each hedge withdraws from it. A hedge it
	// refuses is not started and is recorded as an [EventRefuse] with
	// [OutcomeRetrySuppressed].
	Quota *RetryQuota
	// Detacher, when not nil, tracks the goroutine of every attempt, so that
	// a server can wait at shutdown ([Detacher.Wait]) for a losing attempt
	// that was canceled but has not returned yet. Without it, such a loser
	// is left to finish on its own: Do does not wait for it. Tracking costs
	// one lock per attempt; the attempts are counted in Running, never in
	// Failed.
	Detacher *Detacher
}

var zeroHedge Hedge

// Do runs fn as one attempt of op within ctx's budget and, if it has not
// returned after the hedge delay, as a second attempt beside it. The first
// attempt to succeed wins: Do returns its answer at once and cancels the
// other, without waiting for it to return, so a loser that ignores its
// context cannot hold the answer back. The loser's goroutine ends when its fn
// returns (within microseconds of the cancel for a fn that honours its
// context); set Detacher to wait for such goroutines at shutdown, so that
// none is lost. When both fail, Do returns the error of the one that failed
// last, classified ([SentOf]) as far as the further of the two got, so that a
// [Retry] around the hedge does not take one copy's "not sent" for the whole
// call while the other copy may have run; when the first fails before the
// hedge starts, its error is returned at once (retrying is [Retry]'s job),
// so an answer marked [DoNotRetry] never starts a hedge. Each attempt's
// context carries its number: 1, or 2 for the
// hedge (see [AttemptNumber]).
//
// Because two attempts may run at once, fn must not write to variables it
// shares with the caller; use [HedgeCall] to return a value. A nil h behaves
// as the zero Hedge. Without a hedge delay (too few measurements and no
// Delay) Do costs what [Op.Do] does; otherwise one goroutine, one channel
// and one timer more.
func (h *Hedge) Do(ctx context.Context, op *Op, fn func(ctx context.Context) error) error {
	if op == nil || fn == nil {
		return misconfigured("Hedge.Do needs an Op and a function")
	}
	_, err := hedge(ctx, h, op, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, fn(ctx)
	})
	return err
}

// HedgeCall is [Hedge.Do] for a function that returns a value: it returns
// the value of the attempt that won.
func HedgeCall[T any](ctx context.Context, h *Hedge, op *Op, fn func(ctx context.Context) (T, error)) (T, error) {
	if op == nil || fn == nil {
		var zero T
		return zero, misconfigured("HedgeCall needs an Op and a function")
	}
	return hedge(ctx, h, op, fn)
}

type hedgeResult[T any] struct {
	v   T
	err error
}

func hedge[T any](ctx context.Context, h *Hedge, op *Op, fn func(ctx context.Context) (T, error)) (T, error) {
	if h == nil {
		h = &zeroHedge
	}
	now := time.Now()
	if h.Quota != nil {
		h.Quota.Deposit(now)
	}
	delay, ok := h.delay(op, now)
	if !ok {
		return numberedAttempt(ctx, op, 1, fn)
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan hedgeResult[T], 2) // buffered: an attempt never blocks on it
	start := func(n int) {
		if g := h.Detacher; g != nil {
			g.add()
		}
		go func() {
			if g := h.Detacher; g != nil {
				defer g.done()
			}
			v, err := numberedAttempt(hctx, op, n, fn)
			results <- hedgeResult[T]{v, err}
		}()
	}
	start(1)
	timer := time.NewTimer(delay)
	defer timer.Stop()
	running, hedged := 1, false
	var failed Sent // how far the copy that failed first got
	for {
		select {
		case r := <-results:
			running--
			if r.err == nil || running == 0 {
				// A loser still running is canceled by the deferred
				// cancel and sends to the buffered channel when it
				// returns, so it never blocks.
				return r.v, bothFailed(r.err, failed)
			}
			failed, _ = SentOf(r.err)
		case <-timer.C:
			if !hedged && h.allow(ctx, op) {
				hedged = true
				running++
				start(2)
			}
		}
	}
}

// bothFailed returns err, the error of the copy that failed last, marked as
// far as the copy that failed first got (first) when that is further: a
// retry around the hedge must not take the second copy's "not sent" for
// the whole call when the first copy may have run.
func bothFailed(err error, first Sent) error {
	if err == nil || first == 0 {
		return err
	}
	if s, ok := SentOf(err); !ok || s < first {
		return MarkSent(err, first)
	}
	return err
}

// numberedAttempt runs fn as attempt n of op, its number in its context.
func numberedAttempt[T any](ctx context.Context, op *Op, n int, fn func(ctx context.Context) (T, error)) (T, error) {
	var v T
	err := op.run(ctx, runOpts{n: n}, func(actx context.Context) error {
		var err error
		v, err = fn(withAttemptNumber(actx, n))
		return err
	})
	return v, err
}

// delay returns the wait before the hedge, and false when there is none.
func (h *Hedge) delay(op *Op, now time.Time) (time.Duration, bool) {
	dist := op.estimate(mono(now))
	if dist == nil {
		return h.Delay, h.Delay > 0
	}
	q := h.Quantile
	if q <= 0 || q >= 1 {
		q = defaultHedgeQuantile
	}
	d, _ := dist.Quantile(q) // past what was observed: the longest bound seen
	return d, d > 0
}

// allow reports whether the hedge may start now: op would admit it and the
// retry quota has a retry for it. Each refusal is recorded.
func (h *Hedge) allow(ctx context.Context, op *Op) bool {
	r := read(ctx)
	if dec := op.AdmitAt(r.now, Ask{Available: r.available, Criticality: CriticalityFrom(ctx)}); !dec.Admit {
		_ = suppress(ctx, r, op, 2, OutcomeInsufficient, dec.Needed, nil)
		return false
	}
	if h.Quota != nil && !h.Quota.Withdraw(r.now) {
		_ = suppress(ctx, r, op, 2, OutcomeRetrySuppressed, 0, nil)
		return false
	}
	emit(ctx, r.st, op.Observer, Event{Kind: EventHedge, Stage: op.Name, At: r.now, Remaining: r.remaining, Attempt: 2})
	return true
}
