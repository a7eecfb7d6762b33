package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
	"github.com/timebudget/budget/cmd/budget/internal/topology/topologytest"
)

// TestAuditReversedChain audits the largest chain allowed, declared from
// its last service to its first, through the command (reading, parsing,
// auditing and the summary), and holds it to taking time linear in the
// services: ten times the services may take no more than 30 times as long
// as a tenth of the chain audited in this run (linear: 10; quadratic: 100).
// The times are the process's CPU time where the platform reports it, the
// fastest of a few runs for the small chain: the wall time on a machine
// shared with other tests measures its neighbours as much as the audit,
// and a bound in seconds would measure the machine. That the audit alone
// is linear is tested in internal/audit.
func TestAuditReversedChain(t *testing.T) {
	tSmall := auditChainTime(t, topology.MaxServices/10, 3)
	tBig := auditChainTime(t, topology.MaxServices, 1)
	t.Logf("%d services: %v; %d services: %v (CPU time where measured)", topology.MaxServices/10, tSmall, topology.MaxServices, tBig)
	if tBig > 30*tSmall {
		t.Errorf("10× the services took %.0f× as long (%v, %v): not linear", float64(tBig)/float64(tSmall), tSmall, tBig)
	}
}

// auditChainTime runs budget audit on a chain of n services declared from
// its end, checks that it passes every call, and returns the fastest of
// runs runs: the process's CPU time where the platform reports it, the
// wall time elsewhere.
func auditChainTime(t *testing.T, n, runs int) time.Duration {
	t.Helper()
	p := filepath.Join(t.TempDir(), "chain.yaml")
	if err := os.WriteFile(p, topologytest.ReversedChain(n), 0o644); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(": %d calls checked", n-1)
	best := time.Duration(1<<63 - 1)
	for range runs {
		var stdout, stderr bytes.Buffer
		start, cpu := time.Now(), cpuTime()
		code := run([]string{"audit", p}, &stdout, &stderr)
		took := time.Since(start)
		if cpu > 0 {
			took = time.Duration(cpuTime() - cpu)
		}
		if code != 0 {
			t.Fatalf("%d services: exit code %d; stderr:\n%s", n, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), want) {
			t.Fatalf("%d services: stderr does not say %q: %s", n, want, stderr.String())
		}
		best = min(best, took)
	}
	return best
}
