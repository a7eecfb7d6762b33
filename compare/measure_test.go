package compare_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget/compare"
)

const ms = time.Millisecond

// steady is a scenario of ten requests against a dependency with one
// latency, small enough that every figure can be worked out by hand.
func steady(latency time.Duration, cascade bool) compare.Scenario {
	return compare.Scenario{
		Name:         "steady",
		Rate:         10,
		Duration:     time.Second,
		Patience:     time.Second,
		Phases:       []compare.Phase{{At: 0, Latency: latency}},
		Cascade:      cascade,
		FallbackCost: 2 * ms,
	}
}

// The harness measures what the dependency did, exactly, in fake time.
func TestRunMeasuresTheDependency(t *testing.T) {
	t.Parallel()
	sec := time.Second
	cases := []struct {
		name     string
		scenario compare.Scenario
		strategy compare.Strategy
		want     compare.Result // only the fields compared below
	}{
		{"fast dependency", steady(50*ms, true), compare.Careful(3 * sec),
			compare.Result{Goodput: 10, FromDependency: 10, Calls: 10, Busy: 500 * ms, GiveUpP50: 0}},
		{"careful code, work stops with its caller", steady(5*sec, true), compare.Careful(3 * sec),
			compare.Result{Calls: 10, Busy: 10 * sec, Doomed: 10 * sec, GiveUpP50: sec}},
		{"careful code, work goes on", steady(5*sec, false), compare.Careful(3 * sec),
			compare.Result{Calls: 10, Busy: 50 * sec, Wasted: 40 * sec, Doomed: 50 * sec, GiveUpP50: sec}},
		{"common bug, work stops with its call", steady(5*sec, true), compare.CommonBug(3 * sec),
			compare.Result{Calls: 10, Busy: 30 * sec, Wasted: 20 * sec, Doomed: 30 * sec, GiveUpP50: 3 * sec}},
		{"common bug, work goes on", steady(5*sec, false), compare.CommonBug(3 * sec),
			compare.Result{Calls: 10, Busy: 50 * sec, Wasted: 40 * sec, Doomed: 50 * sec, GiveUpP50: 3 * sec}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				got := tc.scenario.Run(context.Background(), tc.strategy)
				t.Logf("%+v", got)
				w := tc.want
				if got.Requests != 10 || got.Goodput != w.Goodput || got.FromDependency != w.FromDependency ||
					got.Calls != w.Calls || got.Busy != w.Busy || got.Wasted != w.Wasted ||
					got.Doomed != w.Doomed || got.GiveUpP50 != w.GiveUpP50 {
					t.Errorf("got  %+v\nwant %+v", got, w)
				}
			})
		})
	}
}

// Recovery is measured from the start of the last phase, and the reaction
// to the fault from the start of the second.
func TestRunMeasuresRecovery(t *testing.T) {
	t.Parallel()
	s := compare.Scenario{
		Name: "blip", Rate: 100, Duration: 4 * time.Second, Patience: time.Second,
		Phases: []compare.Phase{
			{At: 0, Latency: 10 * ms},
			{At: time.Second, Latency: 5 * time.Second},
			{At: 2 * time.Second, Latency: 10 * ms},
		},
		Cascade: true, FallbackCost: 2 * ms,
	}
	synctest.Test(t, func(t *testing.T) {
		got := s.Run(context.Background(), compare.Careful(3*time.Second))
		t.Logf("%+v", got)
		if !got.Recovered || got.Recovery != 0 {
			t.Errorf("careful code calls every time, so it recovers at once: recovered %v after %v", got.Recovered, got.Recovery)
		}
		if got.Stopped {
			t.Errorf("careful code never stops calling, yet stopped after %v", got.StoppedAfter)
		}
		if got.FromDependency != 300 {
			t.Errorf("%d answers from the dependency, want the 300 of the fast phases", got.FromDependency)
		}
	})
}

// Canceling the run's context ends it early, with nothing left running.
func TestRunCanceled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 498*ms)
		defer cancel()
		got := compare.SlowThenRecovered(false).Run(ctx, compare.Careful(3*time.Second))
		if got.Requests != 100 {
			t.Errorf("%d requests arrived in the first 498ms at 200/s, want 100", got.Requests)
		}
	})
}
