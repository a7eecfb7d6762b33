package compare_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/compare"
)

// TestReport prints every figure of scenario A for each strategy, in both
// kinds of dependency, then budget's figures under other configurations
// beside the breaker's. It checks only that every table accounts for every
// request; the comparisons are asserted in TestSlowThenRecovered and
// TestRecoveryAcrossMoments. Read it with
//
//	go test -run TestReport -v ./...
func TestReport(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	table := func(title string, res []compare.Result) {
		out.WriteString("\n" + title + "\n")
		start := out.Len()
		if err := compare.WriteTable(&out, res); err != nil {
			t.Fatal(err)
		}
		// The table must account for every request of every strategy.
		for _, r := range res {
			if !strings.Contains(out.String()[start:], r.Strategy) {
				t.Errorf("%s: the table has no row for %s", title, r.Strategy)
			}
			if r.Requests == 0 || r.Goodput > r.Requests || r.FromDependency > r.Goodput {
				t.Errorf("%s: %s: %d requests, %d answered in time, %d by the dependency",
					title, r.Strategy, r.Requests, r.Goodput, r.FromDependency)
			}
		}
	}
	for _, cascade := range []bool{true, false} {
		s := compare.SlowThenRecovered(cascade)
		table("scenario A, "+s.Name+" (200 req/s, 1s patience, 5s latency from 2s to 8s)", runAll(t, s, compare.Lineup()))
	}

	ms := time.Millisecond
	tuned := func(c compare.BudgetConfig) compare.Strategy {
		c.Prior, c.Cap = compare.DefaultBudget.Prior, compare.DefaultBudget.Cap
		return compare.Budget(c)
	}
	table("scenario A, work stops with its caller: budget under other configurations (not asserted)",
		runAll(t, compare.SlowThenRecovered(true), []compare.Strategy{
			compare.Failsafe(compare.TunedFailsafe),
			compare.Budget(compare.DefaultBudget),
			tuned(compare.BudgetConfig{ProbeEvery: 100 * ms}),
			tuned(compare.BudgetConfig{Window: 10 * time.Second}),
			tuned(compare.BudgetConfig{Threshold: 0.9}),
		}))
	strategies := []compare.Strategy{compare.Failsafe(compare.TunedFailsafe), compare.Budget(compare.DefaultBudget)}
	recovery := make([][]time.Duration, len(strategies))
	for _, m := range recoveryMoments() {
		for i, r := range recoveryAt(t, true, m, strategies) {
			if r.Recovered {
				recovery[i] = append(recovery[i], r.Recovery)
			}
		}
	}
	out.WriteString("\nscenario A, work stops with its caller, recovery at 8s, 8.25s, ... 9.75s\n")
	for i, st := range strategies {
		lo, mid, hi := spread(recovery[i])
		fmt.Fprintf(&out, "  %s: recovered in %d of %d runs, after min %v, median %v, max %v\n",
			st.Name, len(recovery[i]), len(recoveryMoments()), lo, mid, hi)
	}

	out.WriteString(`
goodput: answered within the user's patience, by the dependency or the fallback
from dependency: of those, answered by the dependency
busy / wasted / doomed ws: the dependency's worker-seconds over all calls / after
  the user had left / on calls whose answer reached nobody in time
stopped calling: from the fault until 90% of every 200ms of requests were refused
recovery: from the dependency's recovery until 90% of every 200ms of requests
  were answered by the dependency in time
give-up p50/p99: time from arrival to the fallback (or to no answer) for requests
  the dependency did not answer, in the scenario's fake time
failsafe-go's recovery at 8s comes out about 130ms in some runs and 1.13s in
  others: when the breaker opens, a request arriving at that same instant may or
  may not get in first, and a late failure of that call shifts the breaker's
  open and half-open cycle by a second
`)
	t.Log(out.String())
}
