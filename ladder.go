package budget

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// Rung is one way of producing an answer in a [Ladder].
type Rung[T any] struct {
	// Op admits and measures the rung: its Name names the rung, its Cap
	// bounds an attempt, and its MinUseful, Prior and measurements decide
	// whether the rung can finish in the time left. It must not be nil;
	// share it between calls so that its measurements accumulate.
	Op *Op
	// Fn produces the answer. Its context's deadline is the time the rung
	// may use.
	Fn func(ctx context.Context) (T, error)
}

// RungStatus says what became of one rung of a [Ladder].
type RungStatus uint8

// What can become of a rung.
const (
	RungNotReached RungStatus = iota // not tried: an earlier rung answered, or the caller gave up
	RungAnswered                     // the rung produced the answer
	RungDeclined                     // not started: it could not finish while leaving time for the last rung
	RungFailed                       // started and failed for a reason other than time
	RungTimedOut                     // started and ran out of time
)

var rungStatusNames = [...]string{"not reached", "answered", "declined", "failed", "timed out"}

// String returns the status in words, such as "declined".
func (s RungStatus) String() string {
	if int(s) < len(rungStatusNames) {
		return rungStatusNames[s]
	}
	return "rung status(" + strconv.Itoa(int(s)) + ")"
}

// RungReport says what became of one rung and why.
type RungReport struct {
	// Name is the rung's Op name.
	Name string
	// Status says whether the rung answered, and if not, why not.
	Status RungStatus
	// Err is why the rung did not answer: the refusal (matching
	// [ErrInsufficient]) for a declined rung, the error of a failed one, an
	// error matching [context.DeadlineExceeded] for one that timed out. It
	// is nil for the rung that answered and for rungs not reached.
	Err error
	// Duration is how long the rung ran; zero when it did not start.
	Duration time.Duration
}

// LadderResult says which rung of a [Ladder] answered and why each other
// rung did not.
type LadderResult struct {
	// Answered is the index of the rung that answered, or -1.
	Answered int
	// Rungs holds one report per rung, in the ladder's order.
	Rungs []RungReport
}

// Ladder is a fallback ladder: rungs ordered from the most expensive (the
// best answer) to the cheapest (a cache, a default), tried in turn until one
// answers. What makes it work inside a deadline is admission: a rung is
// started only if its Op admits it in the time left after holding back what
// the last, cheapest rung needs; otherwise it is declined at once and the
// next rung runs. Without that, an expensive rung that cannot finish spends
// the whole budget on a timeout and the cheap rung that would have answered
// never runs.
//
// The zero value has no rungs and answers nothing. A Ladder holds
// configuration only and is safe for concurrent use as long as Rungs is not
// changed.
type Ladder[T any] struct {
	// Rungs are tried in order, from the most expensive to the cheapest.
	Rungs []Rung[T]
}

// Do tries the rungs in order and returns the first answer. Every rung but
// the last runs with the last rung's need held back (with [WithReserve]): the
// larger of its Op's Prior or measured need and just over its MinUseful. The
// last rung is the last chance: it is started whenever more than its
// MinUseful is left, whatever its estimate says, because the time held for it
// may have been partly spent ending the rung before. A rung its Op does not
// admit in what is left is declined and recorded as an
// [EventSkip] naming the reason; a rung that fails or times out is followed
// by the next. The answer of any rung but the first is recorded as an
// [EventFallback].
//
// When no rung answers, Do returns the zero T and the last rung's error
// (the result says why each rung did not answer); when the caller gives up,
// the remaining rungs are not reached. Do allocates the result's report
// slice plus what each attempt needs.
func (l *Ladder[T]) Do(ctx context.Context) (T, LadderResult, error) {
	var zero T
	res := LadderResult{Answered: -1, Rungs: make([]RungReport, len(l.Rungs))}
	if len(l.Rungs) == 0 {
		return zero, res, misconfigured("ladder has no rungs")
	}
	for i, r := range l.Rungs {
		if r.Op == nil || r.Fn == nil {
			return zero, res, misconfigured("ladder rung " + strconv.Itoa(i) + " has no Op or no Fn")
		}
	}
	last := len(l.Rungs) - 1
	hold := l.Rungs[last].Op.need(time.Now())
	st := stateOf(ctx)
	var lastErr error
	for i, r := range l.Rungs {
		rep := &res.Rungs[i]
		rep.Name = r.Op.Name
		if i > 0 && ctx.Err() != nil {
			continue // the caller gave up or the budget is gone: not reached
		}
		rctx := ctx
		if i < last {
			rctx = WithReserve(ctx, hold)
		}
		var v T
		called := false
		start := time.Now()
		err := r.Op.run(rctx, 0, i == last, func(actx context.Context) error {
			called = true
			var err error
			v, err = r.Fn(actx)
			return err
		})
		if called {
			rep.Duration = time.Since(start)
		}
		if err == nil {
			rep.Status, res.Answered = RungAnswered, i
			if i > 0 {
				ev := Event{Kind: EventFallback, Stage: r.Op.Name, At: start, Duration: rep.Duration, Outcome: OutcomeOK}
				if dl, ok := ctx.Deadline(); ok {
					ev.Remaining = dl.Sub(start)
				}
				emit(ctx, st, r.Op.Observer, ev)
			}
			return v, res, nil
		}
		rep.Err, lastErr = err, err
		var be *Error
		switch {
		case !called && errors.Is(err, ErrInsufficient):
			rep.Status = RungDeclined
			ev := Event{Kind: EventSkip, Stage: r.Op.Name, At: start, Outcome: "insufficient", Err: err}
			if dl, ok := ctx.Deadline(); ok {
				ev.Remaining = dl.Sub(start)
			}
			if errors.As(err, &be) {
				ev.Needed = be.Needed
			}
			emit(ctx, st, r.Op.Observer, ev)
		case !called:
			rep.Status, rep.Err = RungNotReached, nil
		case errors.As(err, &be) && be.Kind == Expired && be.Stage == r.Op.Name:
			rep.Status = RungTimedOut
		default:
			rep.Status = RungFailed
		}
	}
	return zero, res, lastErr
}

// need returns the time an attempt of o is expected to need at now: the
// time its admission requires (Safety × median, or the latency at its
// threshold, or Prior before it has measurements), and always more than its
// MinUseful.
func (o *Op) need(now time.Time) time.Duration {
	var est time.Duration
	dist := o.estimate(now)
	switch {
	case dist != nil && o.Safety > 0:
		est = time.Duration(o.Safety * float64(dist.Median()))
	case dist != nil:
		est, _ = dist.Quantile(o.threshold())
	case o.Safety > 0:
		est = time.Duration(o.Safety * float64(o.Prior))
	default:
		est = o.Prior
	}
	return max(est, o.MinUseful+1)
}
