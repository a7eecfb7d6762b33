package report

import (
	"fmt"
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
		b.WriteString("; the answers came from " + format.Counts(p.Rungs))
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
// are compared by.
func bestSentences(ps []Pattern) []string {
	best, least, most := ps[0], ps[0], ps[0]
	for _, p := range ps[1:] {
		if p.AnsweredRatio > best.AnsweredRatio {
			best = p
		}
		if p.WastedWorkMs < least.WastedWorkMs {
			least = p
		}
		if p.WastedWorkMs > most.WastedWorkMs {
			most = p
		}
	}
	var out []string
	if best.AnsweredRatio > 0 {
		out = append(out, fmt.Sprintf("Most answers within the budget: %s, %s of requests.", best.Name, format.Pct(best.AnsweredRatio)))
	} else {
		out = append(out, "No pattern answered a request within the budget.")
	}
	if most.WastedWorkMs > least.WastedWorkMs {
		out = append(out, fmt.Sprintf("Least work wasted after the caller had gone: %s, %s, against %s for %s.",
			least.Name, format.Ms(least.WastedWorkMs), format.Ms(most.WastedWorkMs), most.Name))
	}
	return out
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
