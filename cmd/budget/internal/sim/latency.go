package sim

import (
	"math"
	"math/rand/v2"
	"time"

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

// estimator is what a caller has measured of one callee: its last
// window attempt durations, timed-out attempts counted as never finishing.
// need is their 90th percentile, recomputed every few samples, or the
// declared prior before there are enough samples.
type estimator struct {
	ring    [window]int64
	n       int // samples recorded so far
	need    int64
	prior   int64
	stale   int   // samples since need was computed
	probeAt int64 // when a refused call may next go through as a probe
}

const (
	window     = 32
	minSamples = 8
	recompute  = 4
	// probeEvery is how often a callee that admission refuses still gets one
	// call, so a recovery is seen.
	probeEvery = int64(100 * time.Millisecond)
)

func (e *estimator) record(d int64) {
	e.ring[e.n%window] = d
	e.n++
	e.stale++
}

// estimate returns the time the callee is expected to need.
func (e *estimator) estimate() int64 {
	if e.n < minSamples {
		return e.prior
	}
	if e.stale >= recompute || e.need == 0 {
		// The 90th percentile of k samples is the (k - k*9/10)-th largest:
		// at most the 4th of 32, found in one pass without sorting.
		k := min(e.n, window)
		rank := k - (k*9)/10
		var top [4]int64 // the largest samples, in descending order
		for _, v := range e.ring[:k] {
			if v <= top[rank-1] {
				continue
			}
			i := rank - 1
			for i > 0 && top[i-1] < v {
				top[i] = top[i-1]
				i--
			}
			top[i] = v
		}
		e.need = max(top[rank-1], 1)
		e.stale = 0
	}
	return e.need
}
