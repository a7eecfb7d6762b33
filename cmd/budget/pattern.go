package main

import (
	"context"
	"time"

	"github.com/timebudget/budget"
)

// pattern is one way of spending time across the hops, as in the project's
// comparison table. Every pattern runs on the same traffic and the same
// faults; what differs is its spending strategy.
type pattern struct {
	key   string // used in report.json and --help
	name  string // shown in the table
	about string // one line for the report
	spend spending
}

// spending is how a pattern spends a request's time at the edge. Each
// pattern is one implementation, so the edge's code has no branch per
// pattern: it asks the strategy.
type spending interface {
	// budgetAware reports whether the edge starts a budget on arrival and the
	// transports send the time left on every hop (see wiring).
	budgetAware() bool
	// request prepares the context a request's stages run in.
	request(ctx context.Context, e *edge) context.Context
	// stage runs one stage and returns the name of the rung that answered,
	// or the last rung's error.
	stage(ctx context.Context, e *edge, st edgeStage) (string, error)
}

var patterns = []pattern{
	{
		key: "per-call", name: "per-call timeouts", spend: perCallTimeouts{},
		about: "each hop its own fixed timeout: context.WithTimeout(r.Context(), t) per call, as most code does today",
	},
	{
		key: "shared", name: "shared deadline", spend: sharedDeadline{},
		about: "one budget started at the edge, spent down across the hops and sent on the wire",
	},
	{
		key: "admission", name: "deadline + admission", spend: admission{},
		about: "the shared budget; each hop is an Op admitted only when its measured latency fits what is left, and the geometry ladder declines rungs that cannot finish, keeping time for the cache",
	},
	{
		key: "none", name: "no timeout", spend: noTimeout{},
		about: "no timeout anywhere; the demo's load generator cuts each request off at its safety limit",
	},
}

// eachRung runs the rungs of a stage in order with attempt until one
// answers: the fallback of code that does not know how much time is left.
func eachRung(ctx context.Context, st edgeStage, attempt func(context.Context, edgeRung) error) (string, error) {
	var err error
	for _, rg := range st.rungs {
		if err = attempt(ctx, rg); err == nil {
			return rg.name, nil
		}
	}
	return "", err
}

// perCallTimeouts gives each hop its own fixed timeout, derived from the
// caller's own context as careful Go code does: context.WithTimeout(
// r.Context(), t). The timeout does not know what is left.
type perCallTimeouts struct{}

func (perCallTimeouts) budgetAware() bool { return false }

func (perCallTimeouts) request(ctx context.Context, _ *edge) context.Context { return ctx }

func (perCallTimeouts) stage(ctx context.Context, e *edge, st edgeStage) (string, error) {
	return eachRung(ctx, st, func(ctx context.Context, rg edgeRung) error {
		c, cancel := context.WithTimeout(ctx, e.perCall)
		defer cancel()
		return rg.call(c)
	})
}

// sharedDeadline starts one budget at the edge and spends it down: each
// attempt gets all that is left and is refused only when nothing is. It
// does not ask whether an attempt can finish.
type sharedDeadline struct{}

func (sharedDeadline) budgetAware() bool { return true }

func (sharedDeadline) request(ctx context.Context, _ *edge) context.Context { return ctx }

func (sharedDeadline) stage(ctx context.Context, _ *edge, st edgeStage) (string, error) {
	return eachRung(ctx, st, func(ctx context.Context, rg edgeRung) error {
		c, cancel, err := budget.Attempt(ctx, rg.op.Name, 0, 0)
		if err != nil {
			return err
		}
		defer cancel()
		start := time.Now()
		left, _ := budget.Remaining(ctx)
		err = rg.call(c)
		budget.Note(ctx, budget.Event{Kind: budget.EventAttempt, Stage: rg.op.Name, At: start,
			Duration: time.Since(start), Remaining: left, Outcome: outcomeOf(err), Err: err})
		return err
	})
}

// admission is the shared budget with knowledge of what each hop needs:
// every hop is an Op admitted only when its measured latency fits what is
// left, a stage with several rungs is a budget.Ladder whose cheap last rung's
// time is held back from the start of the request (budget.WithFallback with
// the ladder's own Need, no hand-picked number), and a reserve is held back
// to write the answer.
type admission struct{}

func (admission) budgetAware() bool { return true }

func (admission) request(ctx context.Context, e *edge) context.Context {
	ctx = budget.WithReserve(ctx, e.reserve)
	for _, st := range e.stages {
		if st.ladder != nil {
			ctx = budget.WithFallback(ctx, st.ladder.Need())
		}
	}
	return ctx
}

func (admission) stage(ctx context.Context, _ *edge, st edgeStage) (string, error) {
	if st.ladder != nil {
		name, _, err := st.ladder.Do(ctx)
		return name, err
	}
	return eachRung(ctx, st, func(ctx context.Context, rg edgeRung) error { return rg.op.Do(ctx, rg.call) })
}

// noTimeout calls every hop with the request's context and no timeout at
// all; only the load generator's safety limit ends a hung request.
type noTimeout struct{}

func (noTimeout) budgetAware() bool { return false }

func (noTimeout) request(ctx context.Context, _ *edge) context.Context { return ctx }

func (noTimeout) stage(ctx context.Context, _ *edge, st edgeStage) (string, error) {
	return eachRung(ctx, st, func(ctx context.Context, rg edgeRung) error { return rg.call(ctx) })
}

// safetyFactor times the budget is how long the load generator waits for any
// one request before cutting it off. Only the no-timeout pattern reaches it.
const safetyFactor = 3

// safetyLimit is the load generator's own cut-off for one request.
func safetyLimit(b time.Duration) time.Duration { return safetyFactor * b }

// cachePlan is the cache rung's prior: its typical latency as a user would
// write it down before measuring. Once the cache has measured itself, the
// ladder holds back its measured p99 plus scheduling slack instead.
const cachePlan = 10 * time.Millisecond

// cacheOp returns the Op of the edge's cache rung, configured as a user
// would. As the last rung it is tried whenever any time is left.
func cacheOp(name string) *budget.Op {
	return &budget.Op{Name: name, Prior: cachePlan}
}
