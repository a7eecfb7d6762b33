package sim_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/sim"
	"github.com/timebudget/budget/cmd/budget/internal/topology"
	"github.com/timebudget/budget/cmd/budget/internal/topology/topologytest"
)

// binaryTree returns levels services each calling the next twice.
func binaryTree(levels int) string {
	var b strings.Builder
	b.WriteString("entry: l0\nbudget: 1s\nservices:\n")
	for i := range levels {
		fmt.Fprintf(&b, "  l%d: {calls: [{to: l%d, timeout: 1ms}, {to: l%d, timeout: 1ms}]}\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "  l%d: {}\n", levels)
	return b.String()
}

func TestCallsPerRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want int64
	}{
		{"alone", "entry: a\nbudget: 1s\nservices: {a: {}}\n", 1},
		{"retries", "entry: a\nbudget: 1s\nservices:\n  a: {calls: [{to: b, timeout: 1ms, retries: 2}]}\n  b: {calls: [{to: c, timeout: 1ms}]}\n  c: {}\n", 1 + 3*2},
		{"fallbacks", "entry: a\nbudget: 1s\nservices:\n  a: {calls: [{to: b, timeout: 1ms, fallback: [{to: c}, {local: cache, latency: {p50: 1ms, p99: 1ms}}]}]}\n  b: {}\n  c: {calls: [{to: b, timeout: 1ms}]}\n", 1 + 1 + 2 + 1},
		{"fanout", string(topologytest.Fanout(1000)), 1 + 1000 + 1000*1000},
		{"tree-62", binaryTree(62), 1<<63 - 1},
		{"tree-70-saturates", binaryTree(70), math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := sim.CallsPerRequest(parse(t, tt.src)); got != tt.want {
				t.Errorf("CallsPerRequest = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestWorkBound: a run whose estimate passes the bound is refused before it
// starts, at once. The 10 KB fanout file took 7.5 s for 10 requests, so the
// default 100,000 would have taken about 20 hours.
func TestWorkBound(t *testing.T) {
	t.Parallel()
	fanout := parse(t, string(topologytest.Fanout(1000)))
	tests := []struct {
		name  string
		top   *topology.Topology
		cfg   sim.Config
		calls int64 // 0: accepted
	}{
		{"fanout-default", fanout, sim.Config{}, 4 * 100_000 * 1_001_001},
		{"fanout-10-requests", fanout, sim.Config{Requests: 10}, 0},
		{"fanout-10-requests-bounded", fanout, sim.Config{Requests: 10, MaxCalls: 40_040_039}, 40_040_040},
		{"fanout-raised", fanout, sim.Config{Requests: 1_000, MaxCalls: 1e10}, 0},
		{"tree-saturates", parse(t, binaryTree(70)), sim.Config{Requests: 1}, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.cfg.Validate(tt.top)
			var we *sim.WorkError
			switch {
			case tt.calls == 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.calls == 0:
				return
			case !errors.As(err, &we):
				t.Fatalf("error %v, want a *sim.WorkError", err)
			case we.Calls != tt.calls:
				t.Errorf("estimate %d, want %d", we.Calls, tt.calls)
			}
			start := time.Now()
			if _, err := sim.Run(tt.top, tt.cfg); !errors.As(err, &we) {
				t.Fatalf("Run: %v", err)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("refusing took %v", took)
			}
		})
	}
}

// TestFaultOnHostAndService: of two faults that apply to a service, on it
// and on its host, the later given applies.
func TestFaultOnHostAndService(t *testing.T) {
	t.Parallel()
	top := parse(t, "entry: a\nbudget: 1s\nservices:\n  a: {calls: [{to: r, timeout: 100ms}]}\n  db: {}\n  r: {host: db}\n")
	for _, tt := range []struct {
		name   string
		faults []sim.Fault
		failed float64
	}{
		{"host-last", []sim.Fault{{Service: "r", Kind: sim.Slow, Latency: time.Millisecond}, {Service: "db", Kind: sim.Fail, P: 1}}, 1},
		{"service-last", []sim.Fault{{Service: "db", Kind: sim.Fail, P: 1}, {Service: "r", Kind: sim.Slow, Latency: time.Millisecond}}, 0},
	} {
		res, err := sim.Run(top, sim.Config{Requests: 20, Concurrency: 1, Faults: tt.faults})
		if err != nil {
			t.Fatal(err)
		}
		if got := res[0].Failed; got != tt.failed {
			t.Errorf("%s: failed %g, want %g", tt.name, got, tt.failed)
		}
	}
}
