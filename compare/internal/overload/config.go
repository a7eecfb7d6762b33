package overload

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Config sizes a run. The zero value is the full run that BENCHMARKS.md
// reports: about two minutes on a 2-core machine.
type Config struct {
	// Duration is how long each variant is measured at each load. Zero means
	// 4 s.
	Duration time.Duration
	// Warmup is how long each variant runs at a load, on a fresh graph,
	// before it is measured, so that shedders and estimators have learned.
	// Zero means 2 s; negative means none.
	Warmup time.Duration
	// Requests, when positive, is how many requests each variant is
	// measured on at each load, sent at the load's rate however long that
	// takes, instead of for Duration; WarmupRequests is then how many are
	// sent before them, unmeasured, instead of for Warmup. Every run at a
	// load is then offered the same requests whatever the machine's speed:
	// the same count, and the same classes, budgets and work, drawn from
	// the seed alone. A small run that must see every class at every load
	// sets them; the full run measures for Duration.
	Requests, WarmupRequests int
	// CapacityDuration is how long the capacity is measured, in closed loop
	// through the unprotected graph, after a warm-up of a quarter of it. Zero
	// means 4 s.
	CapacityDuration time.Duration
	// Capacity, when positive, is used as the capacity (requests a second)
	// instead of measuring it.
	Capacity float64
	// Loads are the offered loads, as multiples of the capacity. Empty means
	// 0.8, 1.5 and 3.
	Loads []float64
	// Variants names the variants to run, in order. Empty means all of
	// [Variants].
	Variants []string
	// Work is the CPU time one request costs the backend. It is rounded to
	// whole units of 250 µs. Zero means 4 ms.
	Work time.Duration
	// BackendProcs is the backend process's GOMAXPROCS. Zero means 1.
	BackendProcs int
	// Budget is every request's budget: how long its user waits. Zero means
	// 300 ms.
	Budget time.Duration
	// Mix is the share of critical, default and sheddable requests. The zero
	// value means 20 %, 50 % and 30 %.
	Mix Mix
	// Workloads names the workloads to run, in order (see [Workloads]).
	// Empty means all of them.
	Workloads []string
	// Budgets is the mix the mixed workload draws each request's budget
	// from. Empty means 100 ms, 500 ms and 3 s, shares 0.3, 0.4 and 0.3.
	Budgets []Weighted
	// Costs is the mix the mixed workload draws each request's CPU time in
	// the backend from, each rounded to whole units of 250 µs. Empty means
	// 1 ms and 20 ms, shares 0.7 and 0.3.
	Costs []Weighted
	// Seed seeds the arrivals and the classes. Zero means 1.
	Seed uint64
	// Executable is the binary started in the backend role; it must call
	// [ServeBackendIfChild] first thing. Empty means this process's own
	// executable.
	Executable string
	// Progress, when not nil, receives a line as each step starts.
	Progress io.Writer
}

// Mix is the share of each class among the requests sent. The shares need
// not add up to one; they are normalized.
type Mix struct {
	Critical, Default, Sheddable float64
}

func (c Config) duration() time.Duration { return orDur(c.Duration, 4*time.Second) }
func (c Config) warmup() time.Duration {
	if c.Warmup < 0 {
		return 0
	}
	return orDur(c.Warmup, 2*time.Second)
}
func (c Config) capacityDuration() time.Duration { return orDur(c.CapacityDuration, 4*time.Second) }
func (c Config) budget() time.Duration           { return orDur(c.Budget, 300*time.Millisecond) }
func (c Config) units() int                      { return max(1, int((orDur(c.Work, 4*time.Millisecond)+unit/2)/unit)) }
func (c Config) procs() int                      { return max(c.BackendProcs, 1) }

func (c Config) seed() uint64 {
	if c.Seed == 0 {
		return 1
	}
	return c.Seed
}

func (c Config) loads() []float64 {
	if len(c.Loads) == 0 {
		return []float64{0.8, 1.5, 3}
	}
	return c.Loads
}

func (c Config) workloads() []string {
	if len(c.Workloads) == 0 {
		return Workloads()
	}
	return c.Workloads
}

func (c Config) budgets() []Weighted {
	if len(c.Budgets) == 0 {
		return []Weighted{{100 * time.Millisecond, 0.3}, {500 * time.Millisecond, 0.4}, {3 * time.Second, 0.3}}
	}
	return c.Budgets
}

func (c Config) costs() []Weighted {
	if len(c.Costs) == 0 {
		return []Weighted{{time.Millisecond, 0.7}, {20 * time.Millisecond, 0.3}}
	}
	return c.Costs
}

// longestBudget is the longest a user of the run's workloads waits: what a
// hop that does not know a request's own budget can choose as its timeout.
func (c Config) longestBudget() time.Duration {
	d := c.budget()
	if slices.Contains(c.workloads(), WorkloadMixed) {
		d = max(d, longest(c.budgets()))
	}
	return d
}

func (c Config) variants() []string {
	if len(c.Variants) == 0 {
		return Variants()
	}
	return c.Variants
}

func (c Config) mix() Mix {
	m := c.Mix
	if m.Critical <= 0 && m.Default <= 0 && m.Sheddable <= 0 {
		return Mix{Critical: 0.2, Default: 0.5, Sheddable: 0.3}
	}
	return m
}

// validate says what is wrong with c, naming the field.
func (c Config) validate() error {
	for _, l := range c.loads() {
		if !(l > 0) {
			return fmt.Errorf("overload: load %v: a load must be a positive multiple of the capacity", l)
		}
	}
	known := map[string]bool{}
	for _, v := range Variants() {
		known[v] = true
	}
	for _, v := range c.variants() {
		if !known[v] {
			return fmt.Errorf("overload: unknown variant %q (known: %v)", v, Variants())
		}
	}
	for _, w := range c.workloads() {
		if !slices.Contains(Workloads(), w) {
			return fmt.Errorf("overload: unknown workload %q (known: %v)", w, Workloads())
		}
	}
	for _, mix := range [][]Weighted{c.Budgets, c.Costs} {
		for _, w := range mix {
			if w.Value <= 0 || !(w.Share > 0) {
				return fmt.Errorf("overload: Budgets and Costs: %v:%v: values and shares must be positive", w.Value, w.Share)
			}
		}
	}
	m := c.Mix
	if m.Critical < 0 || m.Default < 0 || m.Sheddable < 0 {
		return fmt.Errorf("overload: Mix %+v: shares must not be negative", m)
	}
	if c.Requests < 0 || c.WarmupRequests < 0 {
		return fmt.Errorf("overload: Requests and WarmupRequests must not be negative")
	}
	if c.Duration < 0 || c.CapacityDuration < 0 || c.Work < 0 || c.Budget < 0 || c.BackendProcs < 0 || c.Capacity < 0 {
		return fmt.Errorf("overload: Duration, CapacityDuration, Work, Budget, BackendProcs and Capacity must not be negative")
	}
	return nil
}

func orDur(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
