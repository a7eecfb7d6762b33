package pattern

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/cmd/budget/internal/scenario"
)

// hungHop is a hop that never answers: only its context ends a call.
type hungHop struct{}

func (hungHop) Call(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// geoStage is the geo scenario's last stage with a hung exact rung and the
// cache behind it, as the edge builds it (newEdge).
func geoStage() Stage {
	exact := Rung{Name: "exact", Hop: hungHop{}, Op: &budget.Op{Name: "geometry.exact", Prior: 40 * time.Millisecond}}
	cache := Rung{Name: "cache", Op: CacheOp("geometry.cache")}
	st := Stage{Name: "geometry", Rungs: []Rung{exact, cache}, Ladder: new(budget.Ladder[string])}
	for _, rg := range st.Rungs {
		st.Ladder.Rungs = append(st.Ladder.Rungs, budget.Rung[string]{Op: rg.Op,
			Fn: func(ctx context.Context) (string, error) { return rg.Name, rg.Call(ctx) }})
	}
	return st
}

// TestEachPatternSpendsTimeItsWay runs the same stage, a hung rung before
// the cache, under each pattern's strategy, in fake time: how long the stage
// takes and how it ends is the whole difference between the patterns.
func TestEachPatternSpendsTimeItsWay(t *testing.T) {
	t.Parallel()
	const budgetD = 100 * time.Millisecond
	cases := []struct {
		spend    spending
		budget   bool // the edge started a budget
		wantRung string
		wantErr  error
		took     time.Duration
	}{
		// The per-call timeout (60 ms) runs out, then the cache answers.
		{PerCallTimeouts{}, false, "cache", nil, 60*time.Millisecond + scenario.CacheLatency},
		// The hung rung takes the whole budget; nothing is left for the cache,
		// which is refused (or finds the budget expired: the deadline and the
		// refusal happen at the same instant).
		{sharedDeadline{}, true, "", errNoTimeLeft, budgetD},
		// The ladder keeps the cache's need (its prior, cachePlan, and a
		// quarter for scheduling slack) for the cache: the hung rung gets the
		// rest.
		{Admission{}, true, "cache", nil, budgetD - geoStage().Ladder.Need() + scenario.CacheLatency},
		// Nothing ends the hung rung but the caller giving up (at 300 ms).
		{NoTimeout{}, false, "", context.Canceled, 300 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(patternKey(tc.spend), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				e := &Edge{PerCall: 60 * time.Millisecond}
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				ctx, stopCaller := context.WithCancel(ctx)
				defer stopCaller()
				timer := time.AfterFunc(300*time.Millisecond-time.Nanosecond, stopCaller)
				defer timer.Stop()
				if tc.budget {
					var end context.CancelFunc
					ctx, end = budget.Start(ctx, budgetD)
					defer end()
				}
				if got := tc.spend.BudgetAware(); got != tc.budget {
					t.Errorf("budgetAware() = %v, want %v", got, tc.budget)
				}
				start := time.Now()
				rung, err := tc.spend.stage(tc.spend.request(ctx, e), e, geoStage())
				matches := errors.Is(err, tc.wantErr)
				if tc.wantErr == errNoTimeLeft {
					matches = errors.Is(err, context.DeadlineExceeded) || errors.Is(err, budget.ErrInsufficient)
				}
				if rung != tc.wantRung || !matches || (tc.wantErr == nil) != (err == nil) {
					t.Fatalf("stage = %q, %v; want %q, %v", rung, err, tc.wantRung, tc.wantErr)
				}
				if took := time.Since(start); took < tc.took-time.Millisecond || took > tc.took+time.Millisecond {
					t.Errorf("the stage took %v, want %v", took, tc.took)
				}
			})
		})
	}
}

// errNoTimeLeft stands for either way of finding no time left: an expiry
// or a refusal.
var errNoTimeLeft = errors.New("no time left")

// patternKey names a strategy by the pattern that uses it.
func patternKey(s spending) string {
	for _, p := range All {
		if p.Spend == s {
			return p.Key
		}
	}
	return "unknown"
}

// TestPatternsAreDistinct checks the pattern table: four patterns, each with
// its own strategy, key and name, as report.json and the table need.
func TestPatternsAreDistinct(t *testing.T) {
	t.Parallel()
	keys, names, spends := map[string]bool{}, map[string]bool{}, map[spending]bool{}
	for _, p := range All {
		if keys[p.Key] || names[p.Name] || spends[p.Spend] || p.About == "" {
			t.Errorf("pattern %q repeats a key, name or strategy, or has no description", p.Key)
		}
		keys[p.Key], names[p.Name], spends[p.Spend] = true, true, true
	}
	if len(All) != 4 {
		t.Errorf("%d patterns, want 4", len(All))
	}
}
