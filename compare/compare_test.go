package compare_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget/compare"
)

// runAll runs s through every strategy, each in its own bubble.
func runAll(t *testing.T, s compare.Scenario, strategies []compare.Strategy) []compare.Result {
	t.Helper()
	out := make([]compare.Result, len(strategies))
	for i, st := range strategies {
		synctest.Test(t, func(t *testing.T) {
			out[i] = s.Run(context.Background(), st)
		})
	}
	return out
}

// logTable logs results as a table, then every figure of every result.
func logTable(t *testing.T, title string, results []compare.Result) {
	t.Helper()
	var b strings.Builder
	if err := compare.WriteTable(&b, results); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s\n%s", title, b.String())
	for _, r := range results {
		t.Logf("%s: goodput %d of %d (%d from the dependency), refused %d, calls %d, worker-seconds busy %.1f, wasted %.1f, doomed %.1f, "+
			"stopped calling %v after the fault (%v), recovered %v after the recovery (%v), give-up p50 %v p99 %v",
			r.Strategy, r.Goodput, r.Requests, r.FromDependency, r.Refused, r.Calls, r.Busy.Seconds(), r.Wasted.Seconds(), r.Doomed.Seconds(),
			r.StoppedAfter, r.Stopped, r.Recovery, r.Recovered, r.GiveUpP50, r.GiveUpP99)
	}
}

// atMost reports whether a ≤ frac×b + slack.
func atMost(a, b time.Duration, frac float64, slack time.Duration) bool {
	return float64(a) <= frac*float64(b)+float64(slack)
}

// perCallSettings are the per-call limits the comparison is asserted at:
// shorter than the user's patience, and longer.
var perCallSettings = []time.Duration{time.Second, 3 * time.Second}

// Scenario A: a dependency slow from t=2s to t=8s, 200 requests a second
// with 1 s of patience, at per-call limits of 1 s and 3 s. Every claim
// against the tuned breaker is asserted, with no margin but the one named.
func TestSlowThenRecovered(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cascade bool
		// budget's wasted worker time is at most this fraction of the
		// common bug's and of careful code's (plus one worker-second).
		wasteVsBug, wasteVsCareful float64
	}{
		// Careful code's calls end when the request does, and so does the
		// work: it wastes nothing here, and budget can only match it.
		{cascade: true, wasteVsBug: 0.01, wasteVsCareful: 1},
		// The work goes on after its caller left: every call that is
		// started against the slow dependency is paid for in full.
		{cascade: false, wasteVsBug: 0.6, wasteVsCareful: 0.6},
	}
	for _, tc := range cases {
		for _, perCall := range perCallSettings {
			s := compare.SlowThenRecovered(tc.cascade)
			t.Run(s.Name+", per call "+perCall.String(), func(t *testing.T) {
				t.Parallel()
				res := runAll(t, s, compare.LineupPerCall(perCall))
				logTable(t, s.Name, res)
				checkSlowThenRecovered(t, res, tc.wasteVsBug, tc.wasteVsCareful)
			})
		}
	}
}

// checkSlowThenRecovered asserts what budget achieves in scenario A against
// the common bug, careful code and the tuned breaker (res in Lineup order).
func checkSlowThenRecovered(t *testing.T, res []compare.Result, wasteVsBug, wasteVsCareful float64) {
	t.Helper()
	bug, careful, fs, bud := res[0], res[1], res[2], res[3]
	for _, other := range res[:3] {
		if bud.Goodput < other.Goodput {
			t.Errorf("goodput: budget %d < %s %d", bud.Goodput, other.Strategy, other.Goodput)
		}
	}
	if bud.Goodput < bud.Requests*95/100 {
		t.Errorf("budget answered %d of %d requests in time, want at least 95%%", bud.Goodput, bud.Requests)
	}
	if !atMost(bud.Wasted, bug.Wasted, wasteVsBug, time.Second) {
		t.Errorf("wasted: budget %v, more than %.2f of the common bug's %v", bud.Wasted, wasteVsBug, bug.Wasted)
	}
	if !atMost(bud.Wasted, careful.Wasted, wasteVsCareful, time.Second) {
		t.Errorf("wasted: budget %v, more than %.2f of careful code's %v", bud.Wasted, wasteVsCareful, careful.Wasted)
	}
	if !atMost(bud.Doomed, careful.Doomed, 0.7, 0) {
		t.Errorf("doomed: budget %v, more than 0.7 of careful code's %v", bud.Doomed, careful.Doomed)
	}
	if !bud.Stopped || bud.StoppedAfter > 1500*time.Millisecond {
		t.Errorf("budget stopped calling the slow dependency: %v, after %v; want within 1.5s", bud.Stopped, bud.StoppedAfter)
	}
	if !bud.Recovered || bud.Recovery > time.Second {
		t.Errorf("budget recovered: %v, after %v; want within 1s", bud.Recovered, bud.Recovery)
	}
	if bud.GiveUpP50 > careful.GiveUpP50/10 {
		t.Errorf("give-up p50: budget %v, careful code %v", bud.GiveUpP50, careful.GiveUpP50)
	}

	// The design's promises against the tuned breaker.
	if fs.Stopped && bud.StoppedAfter > fs.StoppedAfter {
		t.Errorf("budget stopped calling after %v, the breaker after %v", bud.StoppedAfter, fs.StoppedAfter)
	}
	if fs.Recovered && bud.Recovery > fs.Recovery {
		t.Errorf("budget recovered after %v, the breaker after %v", bud.Recovery, fs.Recovery)
	}
	if !atMost(bud.Doomed, fs.Doomed, 0.9, 0) {
		t.Errorf("doomed: budget %v, more than 0.9 of the breaker's %v", bud.Doomed, fs.Doomed)
	}
	if bud.Wasted > fs.Wasted {
		t.Errorf("wasted: budget %v, more than the breaker's %v", bud.Wasted, fs.Wasted)
	}
}

// recoveryMoments are eight moments spread over two seconds, the length of
// the tuned breaker's open and half-open cycle against the slow dependency.
func recoveryMoments() []time.Duration {
	var out []time.Duration
	for m := 8 * time.Second; m < 10*time.Second; m += 250 * time.Millisecond {
		out = append(out, m)
	}
	return out
}

// recoveryAt runs scenario A with the recovery at moment through each
// strategy, and returns their results.
func recoveryAt(t *testing.T, cascade bool, moment time.Duration, strategies []compare.Strategy) []compare.Result {
	t.Helper()
	s := compare.SlowThenRecovered(cascade)
	s.Phases[len(s.Phases)-1].At = moment
	s.Duration = moment + 4*time.Second
	return runAll(t, s, strategies)
}

// spread returns the minimum, median and maximum of ds.
func spread(ds []time.Duration) (lo, mid, hi time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[0], s[len(s)/2], s[len(s)-1]
}

// When the dependency recovers matters to a breaker, whose open and
// half-open states take turns on their own clock: this runs scenario A with
// the recovery at eight moments spread over two seconds, at per-call limits
// of 1 s and 3 s, with work that stops with its caller and work that goes
// on, and asserts at every moment that budget recovers no later than the
// tuned breaker and spends at most 0.9 of its doomed worker time.
func TestRecoveryAcrossMoments(t *testing.T) {
	t.Parallel()
	for _, cascade := range []bool{true, false} {
		for _, perCall := range perCallSettings {
			t.Run(fmt.Sprintf("cascade %v, per call %v", cascade, perCall), func(t *testing.T) {
				t.Parallel()
				lineup := compare.LineupPerCall(perCall)
				strategies := []compare.Strategy{lineup[2], lineup[3]}
				var fsRec, budRec []time.Duration
				for _, m := range recoveryMoments() {
					res := recoveryAt(t, cascade, m, strategies)
					fs, bud := res[0], res[1]
					if !bud.Recovered || bud.Recovery > time.Second {
						t.Errorf("recovery at %v: budget recovered %v after %v, want within 1s", m, bud.Recovered, bud.Recovery)
					}
					if fs.Recovered && bud.Recovery > fs.Recovery {
						t.Errorf("recovery at %v: budget after %v, the breaker after %v", m, bud.Recovery, fs.Recovery)
					}
					if !atMost(bud.Doomed, fs.Doomed, 0.9, 0) {
						t.Errorf("recovery at %v: doomed budget %v, more than 0.9 of the breaker's %v", m, bud.Doomed, fs.Doomed)
					}
					fsRec, budRec = append(fsRec, fs.Recovery), append(budRec, bud.Recovery)
				}
				for i, rec := range [][]time.Duration{fsRec, budRec} {
					lo, mid, hi := spread(rec)
					t.Logf("%s: recovery min %v, median %v, max %v", strategies[i].Name, lo, mid, hi)
				}
			})
		}
	}
}
