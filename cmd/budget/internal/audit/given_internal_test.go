package audit

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// relaxedGivenTimes is how givenTimes once worked, quadratic on a chain
// declared from its end: the reference its result is compared with.
func relaxedGivenTimes(t *topology.Topology) map[string]time.Duration {
	given := map[string]time.Duration{t.Entry: t.Budget}
	for changed := true; changed; {
		changed = false
		for _, name := range t.Names {
			g, ok := given[name]
			if !ok {
				continue
			}
			for _, c := range t.Services[name].Calls {
				reach := func(to string, timeout time.Duration) {
					if timeout == 0 {
						timeout = g
					}
					if to == t.Entry {
						return
					}
					if old, ok := given[to]; !ok || timeout < old {
						given[to] = timeout
						changed = true
					}
				}
				reach(c.To, c.Timeout)
				for _, f := range c.Fallback {
					if f.To != "" {
						reach(f.To, f.Timeout)
					}
				}
			}
		}
	}
	return given
}

// TestGivenTimesAgrees compares givenTimes with the relaxation it replaced
// on random graphs, cycles, fallbacks and calls without timeouts included.
func TestGivenTimesAgrees(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		n := 1 + rng.IntN(8)
		top := &topology.Topology{Entry: "s0", Budget: time.Duration(1+rng.IntN(5)) * time.Second, Services: map[string]*topology.Service{}}
		for k := range n {
			name := fmt.Sprintf("s%d", k)
			top.Names = append(top.Names, name)
			top.Services[name] = &topology.Service{Name: name}
		}
		rng.Shuffle(n, func(a, b int) { top.Names[a], top.Names[b] = top.Names[b], top.Names[a] })
		timeout := func() time.Duration {
			if rng.IntN(3) == 0 {
				return 0
			}
			return time.Duration(1+rng.IntN(6)) * 500 * time.Millisecond
		}
		for _, s := range top.Services {
			for range rng.IntN(3) {
				c := topology.Call{To: fmt.Sprintf("s%d", rng.IntN(n)), Timeout: timeout()}
				if rng.IntN(4) == 0 {
					c.Fallback = []topology.Fallback{{To: fmt.Sprintf("s%d", rng.IntN(n)), Timeout: timeout()}}
				}
				s.Calls = append(s.Calls, c)
			}
		}
		if got, want := givenTimes(top), relaxedGivenTimes(top); !maps.Equal(got, want) {
			t.Fatalf("graph %d: given %v, want %v", i, got, want)
		}
	}
}
