package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

func TestLognormalFit(t *testing.T) {
	t.Parallel()
	d := fit(topology.Latency{P50: 20 * time.Millisecond, P99: 200 * time.Millisecond})
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]int64, 200_000)
	for i := range xs {
		xs[i] = d.draw(r)
	}
	slices.Sort(xs)
	p50 := float64(xs[len(xs)/2]) / 1e6
	p99 := float64(xs[len(xs)*99/100]) / 1e6
	if math.Abs(p50-20) > 0.5 || math.Abs(p99-200) > 8 {
		t.Errorf("p50 %.2fms p99 %.1fms, want 20ms and 200ms", p50, p99)
	}
	if fit(topology.Latency{}).draw(r) != 0 {
		t.Error("no latency declared, but a draw took time")
	}
	if c := fit(topology.Latency{P50: time.Millisecond, P99: time.Millisecond}); c.draw(r) != 1e6 {
		t.Error("p50 = p99 should be a constant")
	}
}
