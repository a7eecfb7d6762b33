package report

import (
	"fmt"

	"github.com/timebudget/budget/cmd/budget/internal/format"
)

// Intro is what the report opens with, on the page and in the terminal:
// what budget is and what the four patterns are, in two sentences.
const Intro = "budget is a Go library that gives each request one deadline at its edge and spends it " +
	"hop by hop, so that work which cannot finish in the time left is refused before it starts " +
	"and a cheaper answer can take its place. This run sends the same traffic, with the same " +
	"faults, through four patterns: per-call timeouts, one shared deadline, a shared deadline " +
	"with admission (a budget.Op per dependency and a budget.Ladder whose last rung is a cache: " +
	"\"deadline + admission\"), and no timeout at all."

// ReadmeURL is where the report sends a reader who wants to know more.
const ReadmeURL = "https://github.com/timebudget/budget#readme"

// Verdict says, one sentence per scenario and one for the overload case,
// what this run measured: which pattern answered the most requests within
// the budget against the others, or that they tied and what then set them
// apart. Every figure in it is the run's own.
func Verdict(rep *Report) []string {
	var out []string
	for _, s := range rep.Scenarios {
		if len(s.Patterns) > 0 {
			out = append(out, scenarioVerdict(s))
		}
	}
	if o := rep.Overload; o != nil {
		if best, ok := bestWithoutBudget(o); ok {
			out = append(out, fmt.Sprintf("overload: with budgets, %s of the requests that never call the slow dependency "+
				"were answered within the budget, against %s at best without (%s).",
				format.Pct(o.Goodput.WithBudgets), format.Pct(best.Goodput), best.Name))
		}
	}
	return out
}

// scenarioVerdict is one scenario's sentence of the verdict.
func scenarioVerdict(s Scenario) string {
	ps := s.Patterns
	inBudget := func(p Pattern) float64 { return p.AnsweredRatio }
	top := tops(ps, inBudget, format.Pct, true)
	pct := format.Pct(top[0].AnsweredRatio)
	if len(top) == len(ps) {
		v := fmt.Sprintf("%s: a tie, every pattern answered %s of requests within the budget", s.Name, pct)
		if f := fastestFailure(ps); f != "" {
			v += "; " + failureClause(ps)
		}
		return v + "."
	}
	var rest []Pattern
	for _, p := range ps {
		if format.Pct(p.AnsweredRatio) != pct {
			rest = append(rest, p)
		}
	}
	low := tops(rest, inBudget, format.Pct, false)[0]
	high := tops(rest, inBudget, format.Pct, true)[0]
	others := format.Pct(high.AnsweredRatio)
	if low.AnsweredRatio != high.AnsweredRatio && format.Pct(low.AnsweredRatio) != others {
		others = format.Pct(low.AnsweredRatio) + "–" + others
	}
	v := fmt.Sprintf("%s: %s answered %s of requests within the budget, against %s for the others", s.Name, names(top), pct, others)
	least := tops(ps, func(p Pattern) float64 { return p.WastedWorkMs }, format.Ms, false)
	most := tops(ps, func(p Pattern) float64 { return p.WastedWorkMs }, format.Ms, true)
	if len(least) < len(ps) {
		v += fmt.Sprintf("; least work wasted: %s, %s against %s for %s", names(least), format.Ms(least[0].WastedWorkMs),
			format.Ms(most[0].WastedWorkMs), names(most))
	}
	return v + "."
}

// failureClause compares what a failure cost, for a verdict whose shares
// tie: the quickest measured failures against the slowest.
func failureClause(ps []Pattern) string {
	var measured []Pattern
	for _, p := range ps {
		if p.FailedRatio > 0 && !failuresCutOffByDemo(p) {
			measured = append(measured, p)
		}
	}
	cost := func(p Pattern) float64 { return p.FailureCostMs }
	quick := tops(measured, cost, format.Ms, false)
	slow := tops(measured, cost, format.Ms, true)
	return fmt.Sprintf("a failure took %s with %s, against %s with %s", format.Ms(quick[0].FailureCostMs), names(quick),
		format.Ms(slow[0].FailureCostMs), names(slow))
}

// bestWithoutBudget is the overload variant without a budget with the
// highest goodput.
func bestWithoutBudget(o *Overload) (Variant, bool) {
	var best Variant
	ok := false
	for _, v := range o.Variants {
		if v.Key == "budget" {
			continue
		}
		if !ok || v.Goodput > best.Goodput {
			best, ok = v, true
		}
	}
	return best, ok
}
