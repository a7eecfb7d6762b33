package pattern

import (
	"context"
	"time"

	"github.com/timebudget/budget"
)

var All = []Pattern{
	{
		Key: "per-call", Name: "per-call timeouts", Spend: PerCallTimeouts{},
		About: "each hop its own fixed timeout: context.WithTimeout(r.Context(), t) per call, as most code does today",
	},
	{
		Key: "shared", Name: "shared deadline", Spend: sharedDeadline{},
		About: "one budget started at the edge, spent down across the hops and sent on the wire",
	},
	{
		Key: "admission", Name: "deadline + admission", Spend: Admission{},
		About: "the shared budget; each hop is an Op admitted only when its measured latency fits what is left, and the geometry ladder declines rungs that cannot finish, keeping time for the cache",
	},
	{
		Key: "none", Name: "no timeout", Spend: NoTimeout{},
		About: "no timeout anywhere; the demo's load generator cuts each request off at its safety limit",
	},
}

// eachRung runs the rungs of a stage in order with attempt until one
// answers: the fallback of code that does not know how much time is left.
func eachRung(ctx context.Context, st Stage, attempt func(context.Context, Rung) error) (string, error) {
	var err error
	for _, rg := range st.Rungs {
		if err = attempt(ctx, rg); err == nil {
			return rg.Name, nil
		}
	}
	return "", err
}

// PerCallTimeouts gives each hop its own fixed timeout, derived from the
// caller's own context as careful Go code does: context.WithTimeout(
// r.Context(), t). The timeout does not know what is left.
type PerCallTimeouts struct{}

// BudgetAware is false: the edge sends no budget on the wire.
func (PerCallTimeouts) BudgetAware() bool { return false }

// request leaves the request's context as it is: no deadline of its own.
func (PerCallTimeouts) request(ctx context.Context, _ *Edge) context.Context { return ctx }

// stage tries each rung under a fresh timeout of e.PerCall.
func (PerCallTimeouts) stage(ctx context.Context, e *Edge, st Stage) (string, error) {
	return eachRung(ctx, st, func(ctx context.Context, rg Rung) error {
		c, cancel := context.WithTimeout(ctx, e.PerCall)
		defer cancel()
		return rg.Call(c)
	})
}

// sharedDeadline starts one budget at the edge and spends it down: each
// attempt gets all that is left and is refused only when nothing is. It
// does not ask whether an attempt can finish.
type sharedDeadline struct{}

// BudgetAware is true: the budget goes out on the wire.
func (sharedDeadline) BudgetAware() bool { return true }

// request keeps the budget the edge started.
func (sharedDeadline) request(ctx context.Context, _ *Edge) context.Context { return ctx }

// stage tries each rung with all the budget that is left.
func (sharedDeadline) stage(ctx context.Context, _ *Edge, st Stage) (string, error) {
	return eachRung(ctx, st, func(ctx context.Context, rg Rung) error {
		c, cancel, err := budget.Attempt(ctx, rg.Op.Name, 0, 0)
		if err != nil {
			return err
		}
		defer cancel()
		start := time.Now()
		left, _ := budget.Remaining(ctx)
		err = rg.Call(c)
		budget.Note(ctx, budget.Event{Kind: budget.EventAttempt, Stage: rg.Op.Name, At: start,
			Duration: time.Since(start), Remaining: left, Outcome: outcomeOf(err), Err: err})
		return err
	})
}

// Admission is the shared budget with knowledge of what each hop needs:
// every hop is an Op admitted only when its measured latency fits what is
// left, a stage with several rungs is a budget.Ladder whose cheap last rung's
// time is held back from the start of the request (budget.WithFallback with
// the ladder's own Need, no hand-picked number), and a reserve is held back
// to write the answer.
type Admission struct{}

// BudgetAware is true: the budget goes out on the wire.
func (Admission) BudgetAware() bool { return true }

// request holds back the edge's reserve for the answer and each ladder's
// need for its last rung, so no rung spends the time a later one needs.
func (Admission) request(ctx context.Context, e *Edge) context.Context {
	ctx = budget.WithReserve(ctx, e.Reserve)
	for _, st := range e.Stages {
		if st.Ladder != nil {
			ctx = budget.WithFallback(ctx, st.Ladder.Need())
		}
	}
	return ctx
}

// stage runs the stage's ladder: each rung admitted by its Op only when
// its measured latency fits what is left.
func (Admission) stage(ctx context.Context, _ *Edge, st Stage) (string, error) {
	if st.Ladder != nil {
		name, _, err := st.Ladder.Do(ctx)
		return name, err
	}
	return eachRung(ctx, st, func(ctx context.Context, rg Rung) error { return rg.Op.Do(ctx, rg.Call) })
}

// NoTimeout calls every hop with the request's context and no timeout at
// all; only the load generator's safety limit ends a hung request.
type NoTimeout struct{}

// BudgetAware is false: nothing bounds a call.
func (NoTimeout) BudgetAware() bool { return false }

// request leaves the context as it is.
func (NoTimeout) request(ctx context.Context, _ *Edge) context.Context { return ctx }

// stage tries each rung for as long as it takes.
func (NoTimeout) stage(ctx context.Context, _ *Edge, st Stage) (string, error) {
	return eachRung(ctx, st, func(ctx context.Context, rg Rung) error { return rg.Call(ctx) })
}

// SafetyFactor times the budget is how long the load generator waits for any
// one request before cutting it off. Only the no-timeout pattern reaches it.
const SafetyFactor = 3

// SafetyLimit is the load generator's own cut-off for one request.
func SafetyLimit(b time.Duration) time.Duration { return SafetyFactor * b }

// cachePlan is the cache rung's prior: its typical latency as a user would
// write it down before measuring. Once the cache has measured itself, the
// ladder holds back its measured p99 plus scheduling slack instead.
const cachePlan = 10 * time.Millisecond

// CacheOp returns the Op of the edge's cache rung, configured as a user
// would. As the last rung it is tried whenever any time is left.
func CacheOp(name string) *budget.Op {
	return &budget.Op{Name: name, Prior: cachePlan}
}
