package audit_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/audit"
	"github.com/timebudget/budget/cmd/budget/internal/topology"
	"github.com/timebudget/budget/cmd/budget/internal/topology/topologytest"
)

// auditTime parses and audits data, and returns the report and the fastest
// of runs runs.
//
// The time is the process's CPU time where the platform reports it, and
// the wall time elsewhere: on a machine shared with other tests the wall
// time of a run measures its neighbours as much as the audit (a run once
// took 104 s of wall time for 6 s of CPU time).
func auditTime(t *testing.T, data []byte, runs int) (*audit.Report, time.Duration) {
	t.Helper()
	var rep *audit.Report
	best := time.Duration(1<<63 - 1)
	for range runs {
		start, cpu := time.Now(), cpuTime()
		top, err := topology.Parse("x.yaml", data)
		if err != nil {
			t.Fatal(err)
		}
		rep = audit.Check(top)
		took := time.Since(start)
		if cpu > 0 {
			took = time.Duration(cpuTime() - cpu)
		}
		best = min(best, took)
	}
	return rep, best
}

// TestReversedChain audits the longest chain allowed, declared from its end,
// which took 42 s at 20,000 services when the time each service is given
// was relaxed pass after pass. It must take under 10 s, and ten times the
// services may take no more than 30 times as long (linear: 10; quadratic:
// 100), both measured in this run.
func TestReversedChain(t *testing.T) {
	small, tSmall := auditTime(t, topologytest.ReversedChain(topology.MaxServices/10), 3)
	big, tBig := auditTime(t, topologytest.ReversedChain(topology.MaxServices), 1)
	t.Logf("%d services: %v; %d services: %v (CPU time where measured)", topology.MaxServices/10, tSmall, topology.MaxServices, tBig)
	for _, rep := range []*audit.Report{small, big} {
		if len(rep.Findings) != 0 || len(rep.Unreachable) != 0 {
			t.Fatalf("findings %v, unreachable %v", rep.Findings[:min(3, len(rep.Findings))], rep.Unreachable)
		}
	}
	if big.CallsChecked != topology.MaxServices-1 {
		t.Errorf("%d calls checked", big.CallsChecked)
	}
	if tBig > raceSlowdown*10*time.Second {
		t.Errorf("%d services took %v, want under 10s (×%d with the race detector)", topology.MaxServices, tBig, raceSlowdown)
	}
	if tBig > 30*tSmall {
		t.Errorf("10× the services took %.0f× as long (%v, %v): not linear", float64(tBig)/float64(tSmall), tSmall, tBig)
	}
}

// TestLongCycle audits a ring of 50,000 services, whose finding names
// every one of them: joining the names is linear.
func TestLongCycle(t *testing.T) {
	t.Parallel()
	const n = topology.MaxServices / 2
	var b strings.Builder
	b.WriteString("entry: s0\nbudget: 1h\nservices:\n")
	for i := range n {
		fmt.Fprintf(&b, "  s%d: {calls: [{to: s%d, timeout: 1s}]}\n", i, (i+1)%n)
	}
	rep, took := auditTime(t, []byte(b.String()), 1)
	t.Logf("%v", took)
	if len(rep.Findings) == 0 || rep.Findings[0].Kind != audit.Cycle {
		t.Fatalf("findings %d", len(rep.Findings))
	}
	if got := strings.Count(rep.Findings[0].Message, " -> "); got != n {
		t.Errorf("cycle of %d arrows, want %d", got, n)
	}
}

func BenchmarkCheckReversedChain(b *testing.B) {
	top, err := topology.Parse("x.yaml", topologytest.ReversedChain(topology.MaxServices))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		audit.Check(top)
	}
}
