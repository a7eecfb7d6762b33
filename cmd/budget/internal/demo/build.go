package demo

import (
	"maps"
	"slices"
	"time"

	"github.com/timebudget/budget/budgettest"
	"github.com/timebudget/budget/cmd/budget/internal/format"
	"github.com/timebudget/budget/cmd/budget/internal/load"
	"github.com/timebudget/budget/cmd/budget/internal/pattern"
	"github.com/timebudget/budget/cmd/budget/internal/report"
	"github.com/timebudget/budget/cmd/budget/internal/scenario"
)

// scenarioRuns is what the patterns measured on one scenario.
type scenarioRuns struct {
	sc   *scenario.Scenario
	runs []*patternRun
}

// newPatternReport turns one pattern's run into its figures: outcome shares
// against the budget, the latency quantiles, what a failure cost, the rungs
// that answered, refusals and failures by stage, and the wasted work the
// dependencies measured.
func newPatternReport(cfg *demoConfig, r *patternRun) report.Pattern {
	p := report.Pattern{
		Name: r.pattern.Name, Key: r.pattern.Key, About: r.pattern.About,
		BudgetMs: format.Millis(cfg.Budget), PerCallTimeoutMs: format.Millis(r.perCall), Requests: len(r.outcomes),
		Rungs: map[string]int{}, RefusalsByStage: map[string]int{}, FailuresByStage: map[string]int{},
		FailureReasons: map[string]int{}, WastedWorkByDependencyMs: map[string]float64{},
		DependencyCalls: map[string]int64{}, WallSeconds: format.Round3(r.wall.Seconds()),
	}
	lat := make([]time.Duration, 0, len(r.outcomes))
	var failLat []time.Duration
	var answered, late, failed int
	for _, o := range r.outcomes {
		lat = append(lat, o.Latency)
		if o.Ok && o.Rung != "" {
			p.Rungs[o.Rung]++
		}
		switch {
		case o.Ok && o.Latency <= cfg.Budget:
			answered++
		case o.Ok:
			late++
		default:
			failed++
			failLat = append(failLat, o.Latency)
			p.FailuresByStage[o.Stage]++
			p.FailureReasons[o.Reason]++
			if o.Reason == load.CutOff {
				p.CutOff++
			}
		}
	}
	p.LatencyMs = report.Latency{P50: format.Millis(budgettest.Quantile(lat, 0.5)), P99: format.Millis(budgettest.Quantile(lat, 0.99)), Max: format.Millis(budgettest.Quantile(lat, 1))}
	p.FailureCostMs = format.Millis(budgettest.Quantile(failLat, 0.5))
	p.AnsweredRatio = format.Round3(format.Ratio(answered, len(lat)))
	p.LateRatio = format.Round3(format.Ratio(late, len(lat)))
	p.FailedRatio = format.Round3(format.Ratio(failed, len(lat)))
	maps.Copy(p.RefusalsByStage, r.refusals)
	var waste time.Duration
	for _, d := range r.deps {
		waste += d.waste
		p.WastedWorkByDependencyMs[d.name] = format.Millis(d.waste)
		p.DependencyCalls[d.name] = d.calls
	}
	p.WastedWorkMs = format.Millis(waste)
	if m := r.db; m != nil {
		a := m.AfterLeft
		p.Database = &report.Database{
			Statements: m.Statements, Answered: m.Answered, CallerLeft: len(a), RanOn: m.RanOn(),
			AfterCallerLeftMs: report.Latency{P50: format.Millis(budgettest.Quantile(a, 0.5)),
				P99: format.Millis(budgettest.Quantile(a, 0.99)), Max: format.Millis(budgettest.Quantile(a, 1))},
			TotalAfterCallerLeftMs: format.Millis(m.Total()),
		}
	}
	return p
}

// sampleLedgers picks the spend ledgers the report shows: the first and the
// last request of the admission pattern of the first scenario that ran it.
func sampleLedgers(all []scenarioRuns) []report.Ledger {
	for _, sr := range all {
		for _, r := range sr.runs {
			if _, ok := r.pattern.Spend.(pattern.Admission); !ok || len(r.ledgers) == 0 {
				continue
			}
			idx := slices.Sorted(maps.Keys(r.ledgers))
			picks := []struct {
				i     int
				label string
			}{{idx[0], "first request: no measurements yet, admission goes by each rung's prior"}}
			if last := idx[len(idx)-1]; last != idx[0] {
				picks = append(picks, struct {
					i     int
					label string
				}{last, "last request: admission has measured the dependencies"})
			}
			var out []report.Ledger
			for _, p := range picks {
				l := r.ledgers[p.i]
				raw, err := l.MarshalJSON()
				if err != nil {
					continue
				}
				out = append(out, report.Ledger{Scenario: sr.sc.Key, Request: p.i, Label: p.label,
					Ledger: raw, Text: l.String(), Events: l.Events(), Budget: l.Budget(), Start: l.Start()})
			}
			return out
		}
	}
	return nil
}
