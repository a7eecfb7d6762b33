package main

import "time"

// pattern is one way of spending time across the hops, as in the project's comparison table.
// Every pattern runs on the same traffic and the same faults.
type pattern struct {
	key   string // used in report.json and --help
	name  string // shown in the table
	about string // one line for the report
	// budgetAware patterns start a budget at the edge and send the time left
	// on every hop.
	budgetAware bool
	// admission: each hop is an Op that refuses what cannot finish, a
	// ladder keeps time for its cheap last rung, and a reserve is kept to
	// write the answer.
	admission bool
	// perCall: each hop gets its own fixed timeout, derived from the caller's
	// own context as careful Go code does: context.WithTimeout(r.Context(), t).
	perCall bool
}

var patterns = []pattern{
	{
		key: "per-call", name: "per-call timeouts", perCall: true,
		about: "each hop its own fixed timeout: context.WithTimeout(r.Context(), t) per call, as most code does today",
	},
	{
		key: "shared", name: "shared deadline", budgetAware: true,
		about: "one budget started at the edge, spent down across the hops and sent on the wire",
	},
	{
		key: "admission", name: "deadline + admission", budgetAware: true, admission: true,
		about: "the shared budget; each hop is an Op admitted only when its measured latency fits what is left, and the geometry ladder declines rungs that cannot finish, keeping time for the cache",
	},
	{
		key: "none", name: "no timeout",
		about: "no timeout anywhere; the demo's load generator cuts each request off at its safety limit",
	},
}

// safetyFactor times the budget is how long the load generator waits for any
// one request before cutting it off. Only the no-timeout pattern reaches it.
const safetyFactor = 3

// safetyLimit is the load generator's own cut-off for one request.
func safetyLimit(b time.Duration) time.Duration { return safetyFactor * b }
