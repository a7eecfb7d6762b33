// Package audit checks the timeouts of a service call graph against each
// other and against the user's budget, by the rules of timeout budgets: every
// caller must wait longer than its callee can take with all its retries, the
// calls along a request must fit in the budget the user waits, no timeout
// should cut off a callee's normal tail, and no call may be left without a
// timeout.
//
// What "the caller's timeout" is: the time a service is given is the timeout
// on the call that reaches it, or the entry's budget for the entry. When
// several calls reach a service, the smallest of their timeouts is used, since
// that caller gives up first and the service cannot know which caller it is
// serving. A call without a timeout passes on its caller's time. The timeouts
// are taken as configured: a callee's timeout that is larger than its
// caller's is reported on the caller's call, and the callee's own calls are
// still checked against it.
package audit

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// Kind names a kind of finding. The values are stable: they appear in the
// JSON output.
type Kind string

// The kinds of finding, in the order they are checked for each call.
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
	// BelowP99: a timeout is shorter than the callee's typical tail (its
	// p99 plus its own callees'), so more than 1% of calls time out by
	// design.
	BelowP99 Kind = "below-p99"
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
	// suggestion is one; 0 otherwise.
	SuggestedTimeoutMs int64 `json:"suggested_timeout_ms,omitempty"`
	// Line and Col locate the call in the file.
	Line int `json:"line"`
	Col  int `json:"col"`
}

// String renders the finding as one line: caller -> callee: what is wrong;
// suggested value.
func (f Finding) String() string {
	return fmt.Sprintf("%s -> %s: %s; suggested %s", f.Caller, f.Callee, f.Message, f.Suggestion)
}

// Report is the result of Check.
type Report struct {
	// Entry and BudgetMs repeat the topology's entry and budget.
	Entry    string `json:"entry"`
	BudgetMs int64  `json:"budget_ms"`
	// CallsChecked counts the calls (fallback calls included) made by
	// services reachable from the entry.
	CallsChecked int `json:"calls_checked"`
	// WorstCaseMs is how long the entry's calls can take in the worst case.
	WorstCaseMs int64 `json:"worst_case_ms"`
	// Unreachable lists services no request reaches; their calls are not
	// checked.
	Unreachable []string `json:"unreachable,omitempty"`
	// Findings lists the problems in the order of the file.
	Findings []Finding `json:"findings"`
}

// Check audits t. It is pure and deterministic: the same topology gives the
// same report.
func Check(t *topology.Topology) *Report {
	a := &auditor{t: t, given: givenTimes(t), tail: map[string]time.Duration{}, onPath: map[string]bool{}}
	rep := &Report{Entry: t.Entry, BudgetMs: t.Budget.Milliseconds(), Findings: []Finding{}}
	if cyc, pos := t.Cycle(); cyc != nil {
		rep.Findings = append(rep.Findings, Finding{
			Caller: cyc[len(cyc)-2], Callee: cyc[len(cyc)-1], Kind: Cycle,
			Message:    "calls form a cycle " + joinArrows(cyc) + ", so a request can call itself until its time runs out",
			Suggestion: "removing this call or answering it without a call back",
			Line:       pos.Line, Col: pos.Col,
		})
	}
	for _, name := range t.Names {
		given, ok := a.given[name]
		if !ok {
			rep.Unreachable = append(rep.Unreachable, name)
			continue
		}
		s := t.Services[name]
		rep.CallsChecked += len(s.Calls)
		for _, c := range s.Calls {
			for _, f := range c.Fallback {
				if f.To != "" {
					rep.CallsChecked++
				}
			}
		}
		worst := a.checkService(s, given, name == t.Entry)
		if name == t.Entry {
			rep.WorstCaseMs = worst.Milliseconds()
		}
	}
	rep.Findings = append(rep.Findings, a.findings...)
	return rep
}

type auditor struct {
	t        *topology.Topology
	given    map[string]time.Duration
	tail     map[string]time.Duration
	onPath   map[string]bool
	findings []Finding
}

// givenTimes returns, for each service reachable from the entry, the time it
// is given: the smallest timeout of the calls that reach it (a call without
// one passes on its caller's time), the budget for the entry. That is, over
// every path from the entry, the timeout of the path's last call that has
// one (the budget when none has), the smallest. A call back into the entry
// is a cycle, reported as such; the entry keeps the user's budget.
//
// It takes O(E log V) for V services and E calls: reachability first, then
// each service's smallest timeout on a call into it, then those times
// handed on along calls without a timeout, smallest first, so that each
// service is settled by the first time that reaches it. Relaxing every call
// until nothing changed, as this once did, took a pass per service on a
// chain declared from its end: 42 s for 20,000 services.
func givenTimes(t *topology.Topology) map[string]time.Duration {
	edges := func(name string, visit func(to string, timeout time.Duration)) {
		for _, c := range t.Services[name].Calls {
			visit(c.To, c.Timeout)
			for _, f := range c.Fallback {
				if f.To != "" {
					visit(f.To, f.Timeout)
				}
			}
		}
	}
	reached := map[string]bool{t.Entry: true}
	stack := []string{t.Entry}
	for len(stack) > 0 {
		name := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		edges(name, func(to string, _ time.Duration) {
			if !reached[to] {
				reached[to] = true
				stack = append(stack, to)
			}
		})
	}
	// Each reachable service's smallest timeout on a call into it.
	start := map[string]time.Duration{t.Entry: t.Budget}
	for _, name := range t.Names {
		if !reached[name] {
			continue
		}
		edges(name, func(to string, timeout time.Duration) {
			if timeout == 0 || to == t.Entry {
				return
			}
			if old, ok := start[to]; !ok || timeout < old {
				start[to] = timeout
			}
		})
	}
	// Hand the times on, smallest first, in declaration order among equals.
	names := make([]string, 0, len(start))
	for _, name := range t.Names {
		if _, ok := start[name]; ok {
			names = append(names, name)
		}
	}
	sort.SliceStable(names, func(i, j int) bool { return start[names[i]] < start[names[j]] })
	given := make(map[string]time.Duration, len(reached))
	for _, name := range names {
		if _, ok := given[name]; ok {
			continue
		}
		g := start[name]
		given[name] = g
		stack = append(stack[:0], name)
		for len(stack) > 0 {
			from := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			edges(from, func(to string, timeout time.Duration) {
				if timeout != 0 || to == t.Entry {
					return
				}
				if _, ok := given[to]; !ok {
					given[to] = g
					stack = append(stack, to)
				}
			})
		}
	}
	return given
}

// typicalTail is how long a call to name typically takes at worst: its own
// p99 plus its callees' typical tails, as if each were at its p99 at once (an
// upper estimate). Calls on a cycle count once.
func (a *auditor) typicalTail(name string) time.Duration {
	if d, ok := a.tail[name]; ok {
		return d
	}
	if a.onPath[name] {
		return 0
	}
	a.onPath[name] = true
	s := a.t.Services[name]
	d := s.Latency.P99
	for _, c := range s.Calls {
		d = satAdd(d, a.typicalTail(c.To))
	}
	a.onPath[name] = false
	a.tail[name] = d
	return d
}

// worstCall is the longest a call can hold its caller: every attempt running
// to its timeout, the backoffs between them, then every fallback. The
// parser bounds the sum of a service's calls, so it does not overflow.
func (a *auditor) worstCall(c topology.Call, given time.Duration) time.Duration {
	return topology.WorstCall(c, given)
}

// largestTimeout is the largest whole-millisecond timeout t with
// t + retries×(t + backoff) < limit, or 0 when there is none.
func largestTimeout(limit time.Duration, retries int, backoff time.Duration) time.Duration {
	room := limit - time.Duration(retries)*backoff
	if room <= 0 {
		return 0
	}
	t := (room / time.Duration(retries+1)).Truncate(time.Millisecond)
	if time.Duration(retries+1)*t+time.Duration(retries)*backoff >= limit {
		t -= time.Millisecond
	}
	return max(t, 0)
}

// joinArrows joins a path of names. strings.Join, not +=, which copied the
// string so far at each name: quadratic on a cycle through every service.
func joinArrows(names []string) string {
	return strings.Join(names, " -> ")
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
