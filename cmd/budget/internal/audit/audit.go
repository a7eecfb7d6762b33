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
// serving. A call without a timeout passes on its caller's time; a call that
// closes a cycle gives nothing (the cycle is its own finding).
//
// A service's calls are made one after another (the format has no parallel
// calls), so they are summed: the worst case of a service's calls, every
// attempt to its timeout, every backoff and every fallback, must be less
// than the time the service is given. That is the invariant
// timeout(caller) > timeout(callee) + retries × (timeout(callee) + backoff)
// with the calls before and after counted too.
//
// One rule decides every suggested timeout, so that applying all of a
// report's suggestions gives a report without any (a fixed point), and no call
// is ever suggested two values. Each call has, from its callee's measurements
// alone (bottom-up):
//
//   - a floor: the callee's p99 with its callees' (its typical tail), or,
//     when larger, what the callee's own calls need one after another at
//     their floors with their retries and backoff; a timeout below it cuts
//     off normal answers;
//   - a preference: 2× that typical tail, or, when larger, what the
//     callee's own calls need at their preferences; a callee nothing is
//     measured for prefers all the time there is.
//
// The services are then visited from the entry down (top-down), each with
// the time it is given by its callers' timeouts as they will be once the
// suggestions are applied. A service whose calls all have a timeout at or
// above their floor, and fit what it is given one after another, is left
// alone. Otherwise its failing calls are given their preference; if the
// calls then still do not fit, every call of the service is set between
// its floor and its preference, the same fraction of the way for each
// (whole milliseconds, rounded down), the largest fraction that fits. Each
// call whose timeout changes is reported once, with that value. When even
// the floors do not fit what the service is given, no timeout can satisfy
// both the budget and the measurements: that is reported once, as a
// conflict, without a suggested timeout, and the service's calls are left
// as they are.
package audit

import (
	"fmt"
	"sort"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

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
// same report. It takes time linear in the topology, plus a sort of the
// findings.
func Check(t *topology.Topology) *Report {
	a := newAuditor(t)
	rep := &Report{Entry: t.Entry, BudgetMs: t.Budget.Milliseconds(), Findings: []Finding{}}
	if cyc, pos := t.Cycle(); cyc != nil {
		rep.Findings = append(rep.Findings, Finding{
			Caller: cyc[len(cyc)-2], Callee: cyc[len(cyc)-1], Kind: Cycle,
			Message:    "calls form a cycle " + joinArrows(cyc) + ", so a request can call itself until its time runs out",
			Suggestion: "removing this call or answering it without a call back",
			Line:       pos.Line, Col: pos.Col,
		})
	}
	order := a.order()
	given := map[string]time.Duration{t.Entry: t.Budget}
	a.now[t.Entry] = t.Budget
	for _, name := range order {
		g, now := given[name], a.now[name]
		finals, worst := a.checkService(name, g, name == t.Entry)
		if name == t.Entry {
			rep.WorstCaseMs = worst.Milliseconds()
		}
		// Hand each callee the time it will be given once the
		// suggestions are applied: the smallest timeout of the calls
		// into it, or the caller's time through a call without one.
		for i, it := range a.items[name] {
			if it.back {
				continue
			}
			d := finals[i]
			if d == 0 {
				d = g
			}
			if old, ok := given[it.to]; !ok || d < old {
				given[it.to] = d
			}
			if d = effective(it.timeout, now); d < a.now[it.to] || a.now[it.to] == 0 {
				a.now[it.to] = d
			}
		}
	}
	for _, name := range t.Names {
		if !a.reached[name] {
			rep.Unreachable = append(rep.Unreachable, name)
			continue
		}
		rep.CallsChecked += len(a.items[name])
	}
	sort.SliceStable(a.findings, func(i, j int) bool {
		fi, fj := a.findings[i], a.findings[j]
		return fi.Line < fj.Line || fi.Line == fj.Line && fi.Col < fj.Col
	})
	rep.Findings = append(rep.Findings, a.findings...)
	return rep
}
