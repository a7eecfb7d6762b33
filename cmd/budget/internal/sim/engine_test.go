package sim_test

import (
	"math"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/sim"
	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

func parse(t *testing.T, src string) *topology.Topology {
	t.Helper()
	top, err := topology.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return top
}

func byPattern(t *testing.T, top *topology.Topology, cfg sim.Config) map[string]sim.Result {
	t.Helper()
	res, err := sim.Run(top, cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]sim.Result{}
	for _, r := range res {
		out[r.Pattern] = r
	}
	return out
}

// TestRetriesAndBackoff checks the time arithmetic of retries exactly: a
// callee that always takes 1s, three attempts of 100ms with 10ms backoff.
//
// b declares its usual latency, which becomes its Op's prior: an Op that
// has seen only cut-offs at 100ms says nothing of a caller with 250ms, and
// without a prior admits it (a cut-off is never "latency infinite"); with
// a prior the cut-offs lie past, it refuses it but for a probe.
func TestRetriesAndBackoff(t *testing.T) {
	t.Parallel()
	top := parse(t, `entry: a
budget: 250ms
services:
  a:
    calls: [{to: b, timeout: 100ms, retries: 2, backoff: 10ms}]
  b:
    cancellable: true
    latency: {p50: 10ms, p99: 20ms}
`)
	r := byPattern(t, top, sim.Config{Requests: 10, Concurrency: 1, Faults: []sim.Fault{{Service: "b", Kind: sim.Slow, Latency: time.Second}}})
	tests := []struct {
		pattern string
		latency float64 // ms, every request
	}{
		{"per-call", 320}, // 3 × 100ms + 2 × 10ms: past the 250ms budget
		{"shared", 250},   // 100 + 10 + 100 + 10, then the last 30ms
		{"none", 750},     // the user gives up at 3 × 250ms
	}
	for _, tt := range tests {
		got := r[tt.pattern]
		if got.LatencyMs.P50 != tt.latency || got.LatencyMs.Max != tt.latency || got.Failed != 1 {
			t.Errorf("%s: latency p50 %.1fms max %.1fms failed %.2f, want every request to fail at %.0fms",
				tt.pattern, got.LatencyMs.P50, got.LatencyMs.Max, got.Failed, tt.latency)
		}
	}
	// Admission learns from the first requests that b never answers in
	// time, and then refuses it at once (but for a probe every 100ms).
	if ad := r["admission"]; ad.LatencyMs.Max != 250 || ad.LatencyMs.P50 != 0 || ad.Failed != 1 {
		t.Errorf("admission: latency p50 %.1fms max %.1fms failed %.2f; want the first at 250ms and the rest refused at once",
			ad.LatencyMs.P50, ad.LatencyMs.Max, ad.Failed)
	}
	if w := r["per-call"].WastedWorkSeconds; w != 0 {
		t.Errorf("b stops when its caller leaves, yet %.3fs of work was wasted", w)
	}
}

// TestWastedWork: a hung callee that does not stop when its caller leaves
// holds its worker until the run ends, unless it was handed a deadline.
func TestWastedWork(t *testing.T) {
	t.Parallel()
	top := parse(t, `entry: a
budget: 100ms
services:
  a:
    calls: [{to: b, timeout: 50ms}]
  b: {}
`)
	r := byPattern(t, top, sim.Config{Requests: 100, Concurrency: 1, Faults: []sim.Fault{{Service: "b", Kind: sim.Hang}}})
	// Per-call: request i's hung call is given up at 50ms into it and runs
	// until the run ends, (100 - i) × 51ms later (50ms per request and 1ms
	// between requests): about 100 × 50 / 2 × 51ms.
	want := 0.0
	for i := range 100 {
		want += float64(99-i)*0.051 + 0.0
	}
	if got := r["per-call"].WastedWorkSeconds; math.Abs(got-want) > 0.01 {
		t.Errorf("per-call wasted %.3fs, want %.3fs", got, want)
	}
	for _, p := range []string{"shared", "admission"} {
		if got := r[p].WastedWorkSeconds; got != 0 {
			t.Errorf("%s: the deadline stops b, yet %.3fs was wasted", p, got)
		}
	}
}

// TestFallback: a failing call falls back to a local cache, which answers.
func TestFallback(t *testing.T) {
	t.Parallel()
	top := parse(t, `entry: a
budget: 100ms
services:
  a:
    calls:
      - to: b
        timeout: 50ms
        fallback: [{local: cache, latency: {p50: 1ms, p99: 1ms}}]
  b:
    latency: {p50: 10ms, p99: 20ms}
`)
	r := byPattern(t, top, sim.Config{Requests: 200, Faults: []sim.Fault{{Service: "b", Kind: sim.Fail, P: 1}}})
	for p, res := range r {
		if res.InBudget != 1 || res.LatencyMs.Max != 1 {
			t.Errorf("%s: in budget %.2f, max latency %.1fms; want every request answered by the cache in 1ms", p, res.InBudget, res.LatencyMs.Max)
		}
	}
}

// TestOverloadCascade is the classic cascade: a dependency slows down under a
// 200-worker service; with per-call timeouts or none the workers park on it
// and every request fails, with a deadline the unrelated fifth still answers.
func TestOverloadCascade(t *testing.T) {
	t.Parallel()
	top := load(t, "testdata/overload.yaml")
	r := byPattern(t, top, sim.Config{Requests: 10_000, Rate: 500, Seed: 1,
		Faults: []sim.Fault{{Service: "slow", Kind: sim.Slow, Latency: 2500 * time.Millisecond}}})
	for _, p := range []string{"per-call", "none"} {
		if r[p].InBudget > 0.02 {
			t.Errorf("%s: %.2f answered in budget; the pool should be exhausted", p, r[p].InBudget)
		}
	}
	for _, p := range []string{"shared", "admission"} {
		if r[p].InBudget < 0.18 || r[p].GoodputPerSecond < 20*r["per-call"].GoodputPerSecond {
			t.Errorf("%s: %.2f in budget, goodput %.0f/s against per-call's %.0f/s", p, r[p].InBudget, r[p].GoodputPerSecond, r["per-call"].GoodputPerSecond)
		}
	}
	// The requests that never call the slow dependency: the cascade takes
	// them down without a deadline, and leaves them alone with one.
	for p, want := range map[string][2]float64{"per-call": {0, 0.05}, "none": {0, 0.05}, "shared": {0.95, 1}, "admission": {0.95, 1}} {
		if got := r[p].OthersInBudget; got < want[0] || got > want[1] || r[p].Others < 1500 {
			t.Errorf("%s: %.2f of %d unaffected requests answered in budget, want [%.2f, %.2f]", p, got, r[p].Others, want[0], want[1])
		}
	}
	if r["admission"].FailureLatencyMs.P50 > 1 {
		t.Errorf("admission fails in %.1fms at the median; it should refuse the slow call at once", r["admission"].FailureLatencyMs.P50)
	}
}
