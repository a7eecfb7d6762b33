package main

import "time"

// scenario is a request path through the edge: the dependencies it calls and
// the stages it goes through, in order.
type scenario struct {
	key   string
	title string
	// story says, for a reader of the report, what the scenario shows.
	story string
	deps  []depSpec
	// stages run one after another; a stage with several rungs is a fallback
	// ladder: the first rung that answers wins.
	stages []stageSpec
	// perCall returns the fixed timeout each hop gets in the per-call
	// pattern for a given budget.
	perCall func(budget time.Duration) time.Duration
	// perCallRule explains perCall in the output.
	perCallRule string
}

type protocol int

const (
	overHTTP protocol = iota
	overGRPC
)

// String names the protocol for the report.
func (p protocol) String() string {
	if p == overGRPC {
		return "gRPC"
	}
	return "HTTP"
}

// depSpec describes one dependency of a scenario.
type depSpec struct {
	name    string
	proto   protocol
	base    time.Duration // typical latency without a fault
	cascade bool          // whether its work stops when its caller goes away
	// paths are extra HTTP paths served by the same engine, with their own
	// typical latency.
	paths map[string]time.Duration
}

type stageSpec struct {
	name  string
	rungs []rungSpec
}

// rungSpec is one way to complete a stage: a call to a dependency (at path,
// for HTTP) or, when dep is empty, the edge's local cache.
type rungSpec struct {
	name string
	dep  string
	path string
	// base is the rung's typical latency: the prior of its Op.
	base time.Duration
}

// cacheLatency is how long the edge's local cache takes to answer.
const cacheLatency = time.Millisecond

// geoScenario answers a geospatial question through three stages; the last
// one is a ladder whose rungs are exact geometry, simplified geometry (same
// engine, cheaper) and a local cache of earlier answers.
var geoScenario = scenario{
	key:   "geo",
	title: "geospatial query: resolve → retrieve → geometry (exact → simplified → cache)",
	story: "A cheap answer exists: the edge keeps a cache of earlier answers. When geometry hangs, the question is whether a pattern still has time left to use it. " +
		"Per-call timeouts wait out their own timeout first and answer from the cache after the user has gone; a shared deadline spends everything on geometry and fails; " +
		"admission declines the geometry rungs that cannot finish and answers from the cache in time.",
	deps: []depSpec{
		{name: "resolve", proto: overHTTP, base: 15 * time.Millisecond, cascade: true},
		{name: "retrieve", proto: overGRPC, base: 25 * time.Millisecond, cascade: true},
		{name: "geometry", proto: overHTTP, base: 80 * time.Millisecond, cascade: false,
			paths: map[string]time.Duration{"/simplified": 30 * time.Millisecond}},
	},
	stages: []stageSpec{
		{name: "resolve", rungs: []rungSpec{{name: "resolve", dep: "resolve", path: "/", base: 15 * time.Millisecond}}},
		{name: "retrieve", rungs: []rungSpec{{name: "retrieve", dep: "retrieve", base: 25 * time.Millisecond}}},
		{name: "geometry", rungs: []rungSpec{
			{name: "exact", dep: "geometry", path: "/", base: 80 * time.Millisecond},
			{name: "simplified", dep: "geometry", path: "/simplified", base: 30 * time.Millisecond},
			{name: "cache", base: cacheLatency},
		}},
	},
	// A common configuration: 2 s per hop against a 3 s budget.
	perCall:     func(b time.Duration) time.Duration { return b * 2 / 3 },
	perCallRule: "⅔ of the budget per hop (as 2 s per hop for a 3 s budget)",
}

// checkoutScenario is a checkout path: inventory, pricing and
// payment, each required.
var checkoutScenario = scenario{
	key:   "checkout",
	title: "inventory → pricing → payment, each required",
	story: "No cheap answer exists: every stage is required. Once payment is slow, no pattern can answer in time, so the question is what a failure costs. " +
		"Budgets give the user an honest failure within the budget (admission even before calling payment, from its measured latency), " +
		"and payment, which hands the work to an engine that sees only a deadline, stops at the budget instead of working on for nobody.",
	deps: []depSpec{
		{name: "inventory", proto: overHTTP, base: 20 * time.Millisecond, cascade: true},
		{name: "pricing", proto: overGRPC, base: 30 * time.Millisecond, cascade: true},
		{name: "payment", proto: overHTTP, base: 60 * time.Millisecond, cascade: false},
	},
	stages: []stageSpec{
		{name: "inventory", rungs: []rungSpec{{name: "inventory", dep: "inventory", path: "/", base: 20 * time.Millisecond}}},
		{name: "pricing", rungs: []rungSpec{{name: "pricing", dep: "pricing", base: 30 * time.Millisecond}}},
		{name: "payment", rungs: []rungSpec{{name: "payment", dep: "payment", path: "/", base: 60 * time.Millisecond}}},
	},
	// A common configuration: one second per hop for a one-second target.
	perCall:     func(b time.Duration) time.Duration { return b },
	perCallRule: "the whole budget per hop (as 1 s per hop for a 1 s target)",
}

// hasDep reports whether the scenario calls the dependency called name.
func (sc *scenario) hasDep(name string) bool {
	for _, d := range sc.deps {
		if d.name == name {
			return true
		}
	}
	return false
}

var scenarios = []*scenario{&geoScenario, &checkoutScenario}
