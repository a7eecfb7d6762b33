package audit

import (
	"math"
	"strings"
	"time"
)

// Kind names a kind of finding. The values are stable: they appear in the
// JSON output.
type Kind string

// The kinds of finding. A call has at most one finding; its kind is the
// first of these, in this order, that applies.
const (
	// NoTimeout: a call has no timeout, so a slow callee holds the caller
	// for as long as it takes.
	NoTimeout Kind = "no-timeout"
	// Inverted: the invariant fails: the caller gives up before the
	// callee has finished its attempts, timeout(caller) ≤ timeout(callee) +
	// retries × (timeout(callee) + backoff).
	Inverted Kind = "inverted"
	// OverBudget: the entry's calls in the worst case take longer than the
	// user's budget.
	OverBudget Kind = "over-budget"
	// Sequence: a service's calls, made one after another, together take
	// longer in the worst case than the service is given, though each alone
	// fits.
	Sequence Kind = "sequence"
	// BelowP99: a timeout is below the call's floor: the callee's typical
	// tail (its p99 plus its own callees'), or what the callee's own calls
	// need, so more than 1% of calls time out by design.
	BelowP99 Kind = "below-p99"
	// Conflict: the floors of a service's calls, one after another, do not
	// fit the time it is given, so no timeouts satisfy both the budget and
	// the measurements. It carries no suggested timeout.
	Conflict Kind = "conflict"
	// Cycle: calls lead back to a service already on the path.
	Cycle Kind = "cycle"
)

// Finding is one problem on one call.
type Finding struct {
	// Caller and Callee name the call's two ends.
	Caller string `json:"caller"`
	Callee string `json:"callee"`
	// Kind says which rule failed.
	Kind Kind `json:"kind"`
	// Message says what is wrong, in a sentence fragment without the ends.
	Message string `json:"message"`
	// Suggestion says what to change, such as "timeout 633ms".
	Suggestion string `json:"suggestion"`
	// SuggestedTimeoutMs is the suggested timeout in milliseconds, when the
	// suggestion is one; 0 otherwise (a conflict or a cycle). Applying
	// every suggested timeout of a report gives a topology whose report has
	// none.
	SuggestedTimeoutMs int64 `json:"suggested_timeout_ms,omitempty"`
	// Line and Col locate the call in the file.
	Line int `json:"line"`
	Col  int `json:"col"`
}

// satAdd returns a+b for a, b ≥ 0, or math.MaxInt64 when that overflows.
func satAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// satMul returns n×d for n, d ≥ 0, or math.MaxInt64 when that overflows.
func satMul(n int64, d time.Duration) time.Duration {
	if n != 0 && d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return time.Duration(n) * d
}

// ms renders a duration for a finding, rounded to the millisecond.
func ms(d time.Duration) string {
	if d >= math.MaxInt64/2 {
		return "for ever"
	}
	return d.Round(time.Millisecond).String()
}

// joinArrows joins a path of names. strings.Join, not +=, which copied the
// string so far at each name: quadratic on a cycle through every service.
func joinArrows(names []string) string {
	return strings.Join(names, " -> ")
}
