package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// CallsPerRequest returns the most calls one request can make in t: the
// entry's, and for every call a service makes, each attempt (the call and
// its retries) with the calls its callee makes, then each fallback's (one
// for a local answer), as if every attempt failed after doing all its work.
// It saturates at math.MaxInt64: two levels of 1,000 calls make 1,001,001,
// and each further level multiplies. It takes time linear in t, which must
// have no cycle.
func CallsPerRequest(t *topology.Topology) int64 {
	memo := make(map[string]int64, len(t.Names))
	var calls func(name string) int64
	calls = func(name string) int64 {
		if n, ok := memo[name]; ok {
			return n
		}
		memo[name] = 1 // on a cycle, which Validate refuses anyway
		n := int64(1)
		for _, c := range t.Services[name].Calls {
			n = satAdd(n, satMul(int64(c.Retries)+1, calls(c.To)))
			for _, f := range c.Fallback {
				if f.To != "" {
					n = satAdd(n, calls(f.To))
				} else {
					n = satAdd(n, 1)
				}
			}
		}
		memo[name] = n
		return n
	}
	return calls(t.Entry)
}

// WorkError is the error of a run that could make more calls than allowed:
// the estimate is made before anything runs.
type WorkError struct {
	// Requests is the number of requests per pattern.
	Requests int
	// PerRequest is CallsPerRequest of the topology.
	PerRequest int64
	// Calls is the estimate: every pattern's requests × PerRequest,
	// saturating at math.MaxInt64.
	Calls int64
	// Max is the bound it passed, Config.MaxCalls or DefaultMaxCalls.
	Max int64
	// Until, when not zero, is how long the run goes on for a fault that
	// ends (Horizon past its end): Requests then counts the most requests
	// a pattern can send until then.
	Until, Horizon time.Duration
}

// Error says how many calls the run could make, how that was estimated
// and the bound it passed.
func (e *WorkError) Error() string {
	calls := fmt.Sprint(e.Calls)
	if e.Calls == math.MaxInt64 {
		calls = "more than 9.2e18"
	}
	msg := fmt.Sprintf("the run could make %s calls (%d patterns × %d requests × up to %d calls per request, every retry and fallback counted), more than the %d allowed",
		calls, len(Patterns), e.Requests, e.PerRequest, e.Max)
	if e.Until > 0 {
		msg += fmt.Sprintf("; with a fault that ends, a pattern sends requests until %s, %s past its end, up to %d", e.Until, e.Horizon, e.Requests)
	}
	return msg
}

func (c Config) checkWork(t *topology.Topology) error {
	c = c.withDefaults()
	per := CallsPerRequest(t)
	n := c.maxRequests()
	calls := satMul(int64(len(Patterns)), satMul(int64(n), per))
	if calls > c.MaxCalls {
		return &WorkError{Requests: n, PerRequest: per, Calls: calls, Max: c.MaxCalls, Until: c.runsUntil(), Horizon: c.Horizon}
	}
	return nil
}

// satAdd returns a+b for a, b ≥ 0, or math.MaxInt64 when that overflows.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// satMul returns a×b for a, b ≥ 0, or math.MaxInt64 when that overflows.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}
