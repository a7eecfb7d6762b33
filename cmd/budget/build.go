package main

import (
	"maps"
	"slices"
	"time"

	"github.com/timebudget/budget/budgettest"
)

// scenarioRuns is what the patterns measured on one scenario.
type scenarioRuns struct {
	sc   *scenario
	runs []*patternRun
}

// newPatternReport turns one pattern's run into its figures: outcome shares
// against the budget, the latency quantiles, what a failure cost, the rungs
// that answered, refusals and failures by stage, and the wasted work the
// dependencies measured.
func newPatternReport(cfg *demoConfig, r *patternRun) patternReport {
	p := patternReport{
		Name: r.pattern.name, Key: r.pattern.key, About: r.pattern.about,
		BudgetMs: ms(cfg.budget), PerCallTimeoutMs: ms(r.perCall), Requests: len(r.outcomes),
		Rungs: map[string]int{}, RefusalsByStage: map[string]int{}, FailuresByStage: map[string]int{},
		FailureReasons: map[string]int{}, WastedWorkByDependencyMs: map[string]float64{},
		DependencyCalls: map[string]int64{}, WallSeconds: round3(r.wall.Seconds()),
	}
	lat := make([]time.Duration, 0, len(r.outcomes))
	var failLat []time.Duration
	var answered, late, failed int
	for _, o := range r.outcomes {
		lat = append(lat, o.latency)
		if o.ok && o.rung != "" {
			p.Rungs[o.rung]++
		}
		switch {
		case o.ok && o.latency <= cfg.budget:
			answered++
		case o.ok:
			late++
		default:
			failed++
			failLat = append(failLat, o.latency)
			p.FailuresByStage[o.stage]++
			p.FailureReasons[o.reason]++
			if o.reason == cutOff {
				p.CutOff++
			}
		}
	}
	p.LatencyMs = latencyReport{P50: ms(budgettest.Quantile(lat, 0.5)), P99: ms(budgettest.Quantile(lat, 0.99)), Max: ms(budgettest.Quantile(lat, 1))}
	p.FailureCostMs = ms(budgettest.Quantile(failLat, 0.5))
	p.AnsweredRatio = round3(ratio(answered, len(lat)))
	p.LateRatio = round3(ratio(late, len(lat)))
	p.FailedRatio = round3(ratio(failed, len(lat)))
	maps.Copy(p.RefusalsByStage, r.refusals)
	var waste time.Duration
	for _, d := range r.deps {
		waste += d.waste
		p.WastedWorkByDependencyMs[d.name] = ms(d.waste)
		p.DependencyCalls[d.name] = d.calls
	}
	p.WastedWorkMs = ms(waste)
	if m := r.db; m != nil {
		a := m.afterLeft
		p.Database = &dbReport{
			Statements: m.statements, Answered: m.answered, CallerLeft: len(a), RanOn: m.ranOn(),
			AfterCallerLeftMs: latencyReport{P50: ms(budgettest.Quantile(a, 0.5)),
				P99: ms(budgettest.Quantile(a, 0.99)), Max: ms(budgettest.Quantile(a, 1))},
			TotalAfterCallerLeftMs: ms(m.total()),
		}
	}
	return p
}

// sampleLedgers picks the spend ledgers the report shows: the first and the
// last request of the admission pattern of the first scenario that ran it.
func sampleLedgers(all []scenarioRuns) []ledgerReport {
	for _, sr := range all {
		for _, r := range sr.runs {
			if _, ok := r.pattern.spend.(admission); !ok || len(r.ledgers) == 0 {
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
			var out []ledgerReport
			for _, p := range picks {
				l := r.ledgers[p.i]
				raw, err := l.MarshalJSON()
				if err != nil {
					continue
				}
				out = append(out, ledgerReport{Scenario: sr.sc.key, Request: p.i, Label: p.label,
					Ledger: raw, Text: l.String(), events: l.Events(), budget: l.Budget(), start: l.Start()})
			}
			return out
		}
	}
	return nil
}
