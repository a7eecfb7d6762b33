package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/timebudget/budget/cmd/budget/internal/format"
)

// Narrate says in sentences what each pattern of s did, computed from the
// pattern's own figures, and which pattern did best: the report's
// narrative, which can never claim more than the run measured. A scenario's
// Story only asks the question; these sentences answer it, run by run. (A
// fixed text once said admission "answers from the cache in time" of a run
// where 15 % of its answers were late.)
func Narrate(s Scenario) []string {
	out := make([]string, 0, len(s.Patterns)+2)
	for _, p := range s.Patterns {
		out = append(out, patternSentence(p))
	}
	if len(s.Patterns) > 1 {
		out = append(out, bestSentences(s.Patterns)...)
	}
	return out
}

// patternSentence is one pattern's outcome in words: the shares answered in
// budget, late and failed, as measured, which rungs answered, and what was
// refused before it started.
func patternSentence(p Pattern) string {
	var b strings.Builder
	b.WriteString(upperFirst(p.Name) + " answered " + share(p.AnsweredRatio) + " within the budget")
	switch {
	case p.LateRatio > 0 && p.FailedRatio > 0:
		fmt.Fprintf(&b, ", %s after the user had stopped waiting, and %s", share(p.LateRatio), failed(p))
	case p.LateRatio > 0:
		fmt.Fprintf(&b, " and %s after the user had stopped waiting", share(p.LateRatio))
	case p.FailedRatio > 0:
		fmt.Fprintf(&b, "; %s", failed(p))
	}
	if len(p.Rungs) > 0 {
		b.WriteString("; " + rungsText(p.Rungs))
	}
	if n := total(p.RefusalsByStage); n > 0 {
		fmt.Fprintf(&b, "; it declined %d %s before they started (%s)", n, plural(n, "attempt"), format.Counts(p.RefusalsByStage))
	}
	b.WriteString(".")
	return b.String()
}

// failed says what share failed and what a failure cost the user.
func failed(p Pattern) string {
	s := share(p.FailedRatio) + " failed"
	switch {
	case failuresCutOffByDemo(p):
		return s + " (cut off by the demo at its safety limit)"
	case p.FailureCostMs > 0:
		return s + " after " + format.Ms(p.FailureCostMs) + " (the median)"
	}
	return s
}

// bestSentences name the pattern that answered the most requests within the
// budget and the one that wasted the least work, with the figures they
// are compared by. Patterns whose figures read the same (17 % and 17 %) are
// a tie and are named as one: a narrative must not crown a winner the
// table cannot tell apart. When every pattern answered the same share,
// what a failure cost is what sets them apart, and a sentence says so.
func bestSentences(ps []Pattern) []string {
	var out []string
	top := tops(ps, func(p Pattern) float64 { return p.AnsweredRatio }, format.Pct, true)
	pct := format.Pct(top[0].AnsweredRatio)
	switch {
	case pct == format.Pct(0):
		out = append(out, "No pattern answered a request within the budget.")
	case len(top) == len(ps):
		out = append(out, fmt.Sprintf("A tie: every pattern answered %s of requests within the budget.", pct))
	case len(top) > 1:
		out = append(out, fmt.Sprintf("Most answers within the budget: a tie between %s, %s of requests each.", names(top), pct))
	default:
		out = append(out, fmt.Sprintf("Most answers within the budget: %s, %s of requests.", top[0].Name, pct))
	}
	if len(top) > 1 {
		if s := fastestFailure(ps); s != "" {
			out = append(out, s)
		}
	}
	least := tops(ps, func(p Pattern) float64 { return p.WastedWorkMs }, format.Ms, false)
	most := tops(ps, func(p Pattern) float64 { return p.WastedWorkMs }, format.Ms, true)
	if len(least) < len(ps) {
		each := ""
		if len(least) > 1 {
			each = " each"
		}
		out = append(out, fmt.Sprintf("Least work wasted after the caller had gone: %s, %s%s, against %s for %s.",
			names(least), format.Ms(least[0].WastedWorkMs), each, format.Ms(most[0].WastedWorkMs), names(most)))
	}
	return out
}

// fastestFailure compares what a failure cost the user under each pattern
// whose failures were measured (not cut off by the demo): the quickest
// against the slowest. It is empty when fewer than two patterns failed in a
// measured way, or when they all took the same time.
func fastestFailure(ps []Pattern) string {
	var measured []Pattern
	for _, p := range ps {
		if p.FailedRatio > 0 && !failuresCutOffByDemo(p) {
			measured = append(measured, p)
		}
	}
	if len(measured) < 2 {
		return ""
	}
	quick := tops(measured, func(p Pattern) float64 { return p.FailureCostMs }, format.Ms, false)
	slow := tops(measured, func(p Pattern) float64 { return p.FailureCostMs }, format.Ms, true)
	if len(quick) == len(measured) {
		return ""
	}
	return fmt.Sprintf("What sets them apart is what a failure cost: %s failed after %s (the median), against %s for %s.",
		names(quick), format.Ms(quick[0].FailureCostMs), format.Ms(slow[0].FailureCostMs), names(slow))
}

// tops returns the patterns with the highest (or, with high false, the
// lowest) figure, every pattern whose figure reads the same as the best one
// through show included, in the order of ps.
func tops(ps []Pattern, fig func(Pattern) float64, show func(float64) string, high bool) []Pattern {
	best := ps[0]
	for _, p := range ps[1:] {
		if high && fig(p) > fig(best) || !high && fig(p) < fig(best) {
			best = p
		}
	}
	var out []Pattern
	for _, p := range ps {
		if show(fig(p)) == show(fig(best)) {
			out = append(out, p)
		}
	}
	return out
}

// names joins the patterns' names: "a", "a and b", "a, b and c".
func names(ps []Pattern) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Name
	}
	return joinAnd(s)
}

// joinAnd joins words as a sentence lists them: "a", "a and b", "a, b and c".
func joinAnd(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// rungsText says where the answers came from, in words: "all 120 answers
// came from cache", or "97 answers came from cache and 5 from exact",
// largest first.
func rungsText(m map[string]int) string {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b))
	})
	if len(keys) == 1 {
		k := keys[0]
		if m[k] == 1 {
			return "the one answer came from " + k
		}
		return fmt.Sprintf("all %d answers came from %s", m[k], k)
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d from %s", m[k], k)
	}
	parts[0] = fmt.Sprintf("%d %s came from %s", m[keys[0]], plural(m[keys[0]], "answer"), keys[0])
	return joinAnd(parts)
}

// share words a ratio of requests: "every request" and "no request" only
// when the figure says so exactly, the measured percentage otherwise.
func share(r float64) string {
	switch {
	case r >= 1:
		return "every request"
	case r <= 0:
		return "no request"
	}
	return format.Pct(r) + " of requests"
}

// total adds up the counts of m.
func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// plural returns word, with an s unless n is one.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// upperFirst capitalizes the first letter of a pattern's name to start a
// sentence.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
