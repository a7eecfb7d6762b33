package scenario

import "time"

// Scenario is a request path through the edge: the dependencies it calls and
// the stages it goes through, in order.
type Scenario struct {
	// Key names the scenario in --scenario and report.json; Title is its
	// path of stages, for a heading.
	Key   string
	Title string
	// Story says, for a reader of the report, what the scenario shows.
	Story string
	// Deps are the dependencies the edge calls, each served on loopback.
	Deps []depSpec
	// Stages run one after another; a stage with several rungs is a fallback
	// ladder: the first rung that answers wins.
	Stages []StageSpec
	// PerCall returns the fixed timeout each hop gets in the per-call
	// pattern for a given budget.
	PerCall func(budget time.Duration) time.Duration
	// PerCallRule explains perCall in the output.
	PerCallRule string
}

// Protocol is how the edge calls a dependency.
type Protocol int

const (
	// The protocols: HTTP/1.1 through httpbudget, or gRPC through grpcbudget.
	OverHTTP Protocol = iota
	OverGRPC
)

// String names the protocol for the report.
func (p Protocol) String() string {
	if p == OverGRPC {
		return "gRPC"
	}
	return "HTTP"
}

// depSpec describes one dependency of a scenario.
type depSpec struct {
	Name    string
	Proto   Protocol
	Base    time.Duration // typical latency without a fault
	Cascade bool          // whether its work stops when its caller goes away
	// Paths are extra HTTP paths served by the same engine, with their own
	// typical latency.
	Paths map[string]time.Duration
}

// StageSpec is one stage of a scenario's path: its name and the rungs that
// can complete it, tried in order.
type StageSpec struct {
	Name  string
	Rungs []RungSpec
}

// RungSpec is one way to complete a stage: a call to a dependency (at path,
// for HTTP) or, when dep is empty, the edge's local cache.
type RungSpec struct {
	Name string
	Dep  string
	Path string
	// Base is the rung's typical latency: the prior of its Op.
	Base time.Duration
}

// CacheLatency is how long the edge's local cache takes to answer.
const CacheLatency = time.Millisecond

// geoScenario answers a geospatial question through three stages; the last
// one is a ladder whose rungs are exact geometry, simplified geometry (same
// engine, cheaper) and a local cache of earlier answers.
var geoScenario = Scenario{
	Key:   "geo",
	Title: "geospatial query: resolve → retrieve → geometry (exact → simplified → cache)",
	// The story asks the question and says how each pattern goes about it;
	// what each one achieved is the report's narrative, computed from the
	// run's own figures (report.Narrate).
	Story: "A cheap answer exists: the edge keeps a cache of earlier answers. When geometry hangs, the question is whether a pattern still has time left to use it. " +
		"Per-call timeouts wait out their own timeout on each geometry rung before they reach the cache; a shared deadline spends what is left on geometry; " +
		"admission declines the geometry rungs its estimates say cannot finish, and goes to the cache with the time that is left.",
	Deps: []depSpec{
		{Name: "resolve", Proto: OverHTTP, Base: 15 * time.Millisecond, Cascade: true},
		{Name: "retrieve", Proto: OverGRPC, Base: 25 * time.Millisecond, Cascade: true},
		{Name: "geometry", Proto: OverHTTP, Base: 80 * time.Millisecond, Cascade: false,
			Paths: map[string]time.Duration{"/simplified": 30 * time.Millisecond}},
	},
	Stages: []StageSpec{
		{Name: "resolve", Rungs: []RungSpec{{Name: "resolve", Dep: "resolve", Path: "/", Base: 15 * time.Millisecond}}},
		{Name: "retrieve", Rungs: []RungSpec{{Name: "retrieve", Dep: "retrieve", Base: 25 * time.Millisecond}}},
		{Name: "geometry", Rungs: []RungSpec{
			{Name: "exact", Dep: "geometry", Path: "/", Base: 80 * time.Millisecond},
			{Name: "simplified", Dep: "geometry", Path: "/simplified", Base: 30 * time.Millisecond},
			{Name: "cache", Base: CacheLatency},
		}},
	},
	// A common configuration: 2 s per hop against a 3 s budget.
	PerCall:     func(b time.Duration) time.Duration { return b * 2 / 3 },
	PerCallRule: "⅔ of the budget per hop (as 2 s per hop for a 3 s budget)",
}

// Checkout is a checkout path: inventory, pricing and
// payment, each required.
var Checkout = Scenario{
	Key:   "checkout",
	Title: "inventory → pricing → payment, each required",
	Story: "No cheap answer exists: every stage is required. Once payment is slow, the question is what a failure costs. " +
		"The budget patterns end a request at the budget (admission even before calling payment, from its measured latency), " +
		"and hand payment, whose engine sees only a deadline, the budget's deadline with the work.",
	Deps: []depSpec{
		{Name: "inventory", Proto: OverHTTP, Base: 20 * time.Millisecond, Cascade: true},
		{Name: "pricing", Proto: OverGRPC, Base: 30 * time.Millisecond, Cascade: true},
		{Name: "payment", Proto: OverHTTP, Base: 60 * time.Millisecond, Cascade: false},
	},
	Stages: []StageSpec{
		{Name: "inventory", Rungs: []RungSpec{{Name: "inventory", Dep: "inventory", Path: "/", Base: 20 * time.Millisecond}}},
		{Name: "pricing", Rungs: []RungSpec{{Name: "pricing", Dep: "pricing", Base: 30 * time.Millisecond}}},
		{Name: "payment", Rungs: []RungSpec{{Name: "payment", Dep: "payment", Path: "/", Base: 60 * time.Millisecond}}},
	},
	// A common configuration: one second per hop for a one-second target.
	PerCall:     func(b time.Duration) time.Duration { return b },
	PerCallRule: "the whole budget per hop (as 1 s per hop for a 1 s target)",
}

// HasDep reports whether the scenario calls the dependency called name.
func (sc *Scenario) HasDep(name string) bool {
	for _, d := range sc.Deps {
		if d.Name == name {
			return true
		}
	}
	return false
}

var All = []*Scenario{&geoScenario, &Checkout}
