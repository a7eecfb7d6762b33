package overload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Workload names, in the order a run measures them.
const (
	// WorkloadUniform gives every request the same budget (Config.Budget)
	// and the same work (Config.Work), through one backend call.
	WorkloadUniform = "uniform"
	// WorkloadMixed draws each request's budget from Config.Budgets and its
	// work from Config.Costs, through one backend call.
	WorkloadMixed = "mixed"
	// WorkloadFanout gives every request the uniform budget and work, but
	// the edge needs the answers of Fanout backend calls made at once.
	WorkloadFanout = "fanout"
)

// Workloads returns the names of the workloads, in the order a run
// measures them.
func Workloads() []string { return []string{WorkloadUniform, WorkloadMixed, WorkloadFanout} }

// Fanout is how many backend calls the edge makes at once for one request
// of the fan-out workload.
const Fanout = 3

// Weighted is one value of a mix and its share.
type Weighted struct {
	Value time.Duration
	Share float64
}

// ParseMix reads a mix written as comma-separated value:share pairs, such
// as "100ms:0.3,500ms:0.4,3s:0.3"; a pair with no share has share 1. The
// shares need not add up to one.
func ParseMix(s string) ([]Weighted, error) {
	var out []Weighted
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		v, sh, found := strings.Cut(part, ":")
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("mix %q: %q is not a duration", s, v)
		}
		share := 1.0
		if found {
			if share, err = strconv.ParseFloat(strings.TrimSpace(sh), 64); err != nil || !(share > 0) || math.IsInf(share, 0) {
				return nil, fmt.Errorf("mix %q: share %q of %v is not a positive finite number", s, sh, d)
			}
		}
		if d <= 0 {
			return nil, fmt.Errorf("mix %q: %v is not a positive duration", s, d)
		}
		out = append(out, Weighted{Value: d, Share: share})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mix %q: no value:share pair", s)
	}
	return out, nil
}

// FormatMix writes a mix as ParseMix reads it.
func FormatMix(m []Weighted) string {
	var parts []string
	for _, w := range m {
		parts = append(parts, fmt.Sprintf("%v:%g", w.Value, w.Share))
	}
	return strings.Join(parts, ",")
}

// draw draws a value from the mix m.
func drawFrom(rng *rand.Rand, m []Weighted) time.Duration {
	total := 0.0
	for _, w := range m {
		total += w.Share
	}
	x := rng.Float64() * total
	for _, w := range m {
		if x < w.Share {
			return w.Value
		}
		x -= w.Share
	}
	return m[len(m)-1].Value
}

// mean is the mix's mean value.
func mean(m []Weighted) time.Duration {
	total, sum := 0.0, 0.0
	for _, w := range m {
		total += w.Share
		sum += w.Share * float64(w.Value)
	}
	return time.Duration(sum / total)
}

// longest is the mix's longest value.
func longest(m []Weighted) time.Duration {
	var d time.Duration
	for _, w := range m {
		d = max(d, w.Value)
	}
	return d
}

// workload is what the load generator draws for each request, and how the
// edge serves it.
type workload struct {
	name    string
	budgets []Weighted // each request's budget
	costs   []Weighted // each request's work in the backend, rounded to units
	fanout  int        // backend calls the edge needs for one request
}

// workload returns the named workload of c.
func (c Config) workload(name string) workload {
	w := workload{name: name, fanout: 1,
		budgets: []Weighted{{Value: c.budget(), Share: 1}},
		costs:   []Weighted{{Value: time.Duration(c.units()) * unit, Share: 1}}}
	switch name {
	case WorkloadMixed:
		w.budgets, w.costs = c.budgets(), c.costs()
	case WorkloadFanout:
		w.fanout = Fanout
	}
	return w
}

// unitsOf rounds a cost to whole units of work, at least one.
func unitsOf(d time.Duration) int { return max(1, int((d+unit/2)/unit)) }
