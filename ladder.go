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

// RungReport says what became of one rung and why.
type RungReport struct {
	// Name is the rung's Op name.
	Name string
	// Outcome says whether the rung answered ([OutcomeOK]) and if not, why
	// not: [OutcomeInsufficient] when it was declined because it could not
	// finish while leaving time for the last rung, [OutcomeFailed] or
	// [OutcomeExpired] when it ran and did not answer, [OutcomeCanceled]
	// when the caller gave up while it ran, [OutcomeNone] when it was not
	// reached (an earlier rung answered, or the caller gave up before).
	Outcome Outcome
	// Err is why the rung did not answer: the refusal (matching
	// [ErrInsufficient]) for a declined rung, the error of a failed one, an
	// error matching [context.DeadlineExceeded] for one that ran out of
	// time. It is nil for the rung that answered and for rungs not reached.
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
// changed. Do on a nil *Ladder returns an error matching [ErrMisconfigured],
// and its Need is zero.
type Ladder[T any] struct {
	// Rungs are tried in order, from the most expensive to the cheapest.
	Rungs []Rung[T]
}

// Do tries the rungs in order and returns the first answer. Every rung but
// the last runs with the last rung's need ([Ladder.Need]) held back, and
// time held with [WithFallback] counts toward it; the last rung runs with
// that time given back. The last rung is the last chance: it is started whenever more than its
// MinUseful is left, whatever its estimate says, because the time held for it
// may have been partly spent ending the rung before. A rung its Op does not
// admit in what is left is declined and recorded as an [EventRefuse]; a rung
// that fails or runs out of time is followed by the next. The attempts of
// every rung but the first are recorded as [EventFallback] rather than
// [EventAttempt], one event per rung that ran.
//
// When no rung answers, Do returns the zero T and the last rung's error
// (the result says why each rung did not answer); when the caller gives up,
// the remaining rungs are not reached. Do allocates the result's report
// slice plus what each attempt needs.
func (l *Ladder[T]) Do(ctx context.Context) (T, LadderResult, error) {
	var zero T
	if l == nil {
		return zero, LadderResult{Answered: -1}, misconfigured("Do on a nil *Ladder")
	}
	res := LadderResult{Answered: -1, Rungs: make([]RungReport, len(l.Rungs))}
	if len(l.Rungs) == 0 {
		return zero, res, misconfigured("ladder has no rungs")
	}
	for i, r := range l.Rungs {
		if r.Op == nil || r.Fn == nil {
			return zero, res, misconfigured("ladder rung " + strconv.Itoa(i) + " has no Op or no Fn")
		}
	}
	hold := l.Need()
	var lastErr error
	for i, r := range l.Rungs {
		rep := &res.Rungs[i]
		rep.Name = r.Op.Name
		if i > 0 && ctx.Err() != nil {
			continue // the caller gave up or the budget is gone: not reached
		}
		v, err := l.try(ctx, i, hold, rep)
		if err == nil {
			res.Answered = i
			return v, res, nil
		}
		lastErr = err
	}
	return zero, res, lastErr
}

// Need returns the time the ladder's last rung needs, which every rung before
// it leaves alone: a high quantile of the last rung's latency (the 0.99 of
// its Op's measurements, or its Prior before it has enough of them) plus a
// quarter of that, and at least 2 ms, for scheduling slack. Hold it back
// from the whole request with [WithFallback] where the request starts, so
// that the stages before the ladder leave it alone too. It is zero for a
// ladder without rungs.
func (l *Ladder[T]) Need() time.Duration {
	if l == nil || len(l.Rungs) == 0 || l.Rungs[len(l.Rungs)-1].Op == nil {
		return 0
	}
	return l.Rungs[len(l.Rungs)-1].Op.need(time.Now())
}

// try runs rung i, holding back hold for the last rung unless it is the last,
// and fills in its report. Time held with WithFallback counts toward hold,
// and the last rung runs with it given back.
func (l *Ladder[T]) try(ctx context.Context, i int, hold time.Duration, rep *RungReport) (T, error) {
	r, last := l.Rungs[i], len(l.Rungs)-1
	st := stateOf(ctx)
	rctx := ctx
	switch {
	case i == last:
		rctx = withoutFallback(ctx, st)
	case st != nil && st.fallback > 0:
		rctx = WithReserve(ctx, hold-st.fallback) // tops up only what is missing
	default:
		rctx = WithReserve(ctx, hold)
	}
	ro := runOpts{lastChance: i == last}
	if i > 0 {
		ro.kind = EventFallback
	}
	var v T
	called := false
	start := time.Now()
	err := r.Op.run(rctx, ro, func(actx context.Context) error {
		called = true
		var err error
		v, err = r.Fn(actx)
		return err
	})
	if called {
		rep.Duration = time.Since(start)
	}
	var be *Error
	switch {
	case err == nil:
		rep.Outcome = OutcomeOK
	case !called && errors.As(err, &be) && (be.Outcome == OutcomeInsufficient || be.Outcome == OutcomeThrottled):
		rep.Outcome, rep.Err = be.Outcome, err // declined
	case !called:
		// ctx ended before the rung could start: not reached.
	case errors.As(err, &be) && be.Stage == r.Op.Name:
		rep.Outcome, rep.Err = be.Outcome, err
	case errors.Is(err, context.Canceled):
		rep.Outcome, rep.Err = OutcomeCanceled, err
	default:
		rep.Outcome, rep.Err = OutcomeFailed, err
	}
	return v, err
}
