package sim

import (
	"math"
	"math/rand/v2"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

// lognormal draws latencies from a log-normal distribution with the given
// median and 99th percentile: ln X ~ N(ln p50, σ²) with σ = ln(p99/p50)/z99.
// A zero median means the service takes no time of its own.
type lognormal struct {
	mu, sigma float64
	zero      bool
}

func fit(l topology.Latency) lognormal {
	if l.P50 <= 0 {
		return lognormal{zero: true}
	}
	mu := math.Log(float64(l.P50))
	return lognormal{mu: mu, sigma: (math.Log(float64(l.P99)) - mu) / z99}
}

func (d lognormal) draw(r *rand.Rand) int64 {
	if d.zero {
		return 0
	}
	if d.sigma == 0 {
		return int64(math.Round(math.Exp(d.mu)))
	}
	x := math.Exp(d.mu + d.sigma*r.NormFloat64())
	// Clamp the far tail so nothing overflows.
	return int64(min(x, float64(topology.MaxDuration)))
}

// never marks a time that does not come: no deadline, a hung job.
const never = math.MaxInt64
