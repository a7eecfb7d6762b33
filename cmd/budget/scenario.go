package main

import "time"

// scenario is a request path through the edge: the dependencies it calls and
// the stages it goes through, in order.
type scenario struct {
	key   string
	title string
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
	// The seed's numbers: 2 s per hop against a 3 s budget.
	perCall:     func(b time.Duration) time.Duration { return b * 2 / 3 },
	perCallRule: "⅔ of the budget per hop (the seed's 2 s per hop for a 3 s budget)",
}

// checkoutScenario is the checkout path of the seeds: inventory, pricing and
// payment, each required.
var checkoutScenario = scenario{
	key:   "checkout",
	title: "inventory → pricing → payment, each required",
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
	// The seed's numbers: one second per hop for a one-second target.
	perCall:     func(b time.Duration) time.Duration { return b },
	perCallRule: "the whole budget per hop (the seed's 1 s per hop for a 1 s target)",
}

var scenarios = []*scenario{&geoScenario, &checkoutScenario}
