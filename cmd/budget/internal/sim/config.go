package sim

import "time"

// Pattern is one way of spending time across the hops.
type Pattern int

// The four patterns, in the order reports show them.
const (
	// PerCall gives each attempt its call's configured timeout, fresh at
	// every hop; nothing is handed to the callee, so a callee that does not
	// stop when its caller leaves runs on.
	PerCall Pattern = iota
	// Shared starts one deadline at the entry from the budget; each attempt
	// gets min(its timeout, time left), the callee is handed that deadline
	// and stops there, and nothing starts once the time is gone.
	Shared
	// Admission is Shared, and each attempt goes through the admission of
	// a budget.Op, one per caller and callee, run on virtual time with
	// BeginAt and EndAt: refused before it starts when the callee is
	// unlikely to finish in the time left by the Op's measurements, stalled
	// or failing, probed while refused. A call with a fallback keeps its
	// last rung's p99 in reserve.
	Admission
	// NoTimeout sets no timeout anywhere; only the user stops waiting.
	NoTimeout
)

// Patterns lists every pattern in report order.
var Patterns = []Pattern{PerCall, Shared, Admission, NoTimeout}

// Key returns the pattern's stable name in report.json.
func (p Pattern) Key() string {
	return [...]string{"per-call", "shared", "admission", "none"}[p]
}

// String returns the pattern's name in tables.
func (p Pattern) String() string {
	return [...]string{"per-call timeouts", "shared deadline", "deadline + admission", "no timeout"}[p]
}

func (p Pattern) budgetAware() bool { return p == Shared || p == Admission }

// Defaults of Config's zero fields.
const (
	// MaxRequests is the most requests a pattern may serve: each takes
	// about 30 bytes of results, per pattern.
	MaxRequests = 20_000_000
	// DefaultRequests is how many requests each pattern serves.
	DefaultRequests = 100_000
	// DefaultConcurrency is how many users the closed loop has.
	DefaultConcurrency = 100
	// DefaultWorkers is the pool size of a service that declares none, the
	// 200 threads of the classic cascade.
	DefaultWorkers = 200
	// GiveUpFactor times the budget is how long a user waits before giving
	// up on a request, as budget demo's load generator does. Only requests
	// that neither answer nor fail by then reach it.
	GiveUpFactor = 3
	// ThinkTime is how long a user of the closed loop waits between the end
	// of one request and the next. Without it, requests refused at once
	// would follow each other at one instant of virtual time.
	ThinkTime = int64(time.Millisecond)
)

// Config says what traffic to simulate.
type Config struct {
	// Requests is how many requests each pattern serves; 0 means
	// DefaultRequests.
	Requests int
	// Rate, when more than zero, sends requests at this many per second of
	// virtual time, with exponential gaps (an open loop, which can
	// overload the services). Zero means a closed loop of Concurrency
	// users, each sending its next request when the last one ended.
	Rate float64
	// Concurrency is the closed loop's number of users; 0 means
	// DefaultConcurrency. Unused when Rate is set.
	Concurrency int
	// Seed seeds the random draws; the same seed gives the same report.
	Seed uint64
	// Faults are injected into their services (and the services that name
	// them as host) for the whole run.
	Faults []Fault
	// Workers is the pool size of services that do not declare one; 0
	// means DefaultWorkers.
	Workers int
	// MaxCalls bounds the work of a run: Validate refuses, with a
	// *WorkError, a run whose patterns × requests × CallsPerRequest is
	// more. 0 means DefaultMaxCalls.
	MaxCalls int64
	// Horizon is how long a run with a fault that ends goes on past the
	// latest such end (see RecoveryHorizon); 0 means RecoveryHorizon.
	Horizon time.Duration
}

func (c Config) withDefaults() Config {
	if c.Requests == 0 {
		c.Requests = DefaultRequests
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.MaxCalls == 0 {
		c.MaxCalls = DefaultMaxCalls
	}
	if c.Horizon == 0 {
		c.Horizon = RecoveryHorizon
	}
	return c
}

// DefaultMaxCalls is the most calls a run may make when Config.MaxCalls is
// zero, as estimated by patterns × requests × CallsPerRequest. The
// estimate is a worst case, every attempt failing after all its work, which
// a run seldom comes near: a million requests through testdata/tree200.yaml
// (1,235 calls per request at most, about 200 made) are estimated at 4.9
// billion calls and take about 38 s of CPU. The default 100,000 requests
// fit with up to 12,500 calls per request; two levels of 1,000 calls
// (1,001,001 per request), which would take about 20 hours, do not.
const DefaultMaxCalls = 5_000_000_000

// RecoveryHorizon is how long a run with a fault that ends goes on past the
// latest such end, unless Config.Horizon says otherwise: every pattern sends
// requests until it has sent Config.Requests and until the horizon past the
// end, so that a fast pattern (one that answers from a fallback in a
// millisecond) is seen recovering, or not, as long as a slow one.
const RecoveryHorizon = 10 * time.Second

// MaxRecoveryRequests bounds the requests a pattern sends beyond
// Config.Requests to reach RecoveryHorizon.
const MaxRecoveryRequests = 2_000_000

// runsUntil returns the virtual time up to which requests are sent beyond
// Requests: Horizon past the latest end of a fault, or 0 when no fault
// ends. c has its defaults.
func (c Config) runsUntil() time.Duration {
	var end time.Duration
	for _, f := range c.Faults {
		end = max(end, f.End)
	}
	if end == 0 {
		return 0
	}
	return end + c.Horizon
}

// maxRequests returns the most requests a pattern may send: Requests, or
// with a fault that ends, as many as can be sent until runsUntil (a closed
// loop's users one each per ThinkTime at most; an open loop twice its rate,
// plus 1,000), up to Requests + MaxRecoveryRequests. c has its defaults.
func (c Config) maxRequests() int {
	until := c.runsUntil()
	if until == 0 {
		return c.Requests
	}
	n := float64(c.Concurrency) * (float64(until)/float64(ThinkTime) + 1)
	if c.Rate > 0 {
		n = 2*c.Rate*until.Seconds() + 1000
	}
	return c.Requests + int(min(n, MaxRecoveryRequests))
}
