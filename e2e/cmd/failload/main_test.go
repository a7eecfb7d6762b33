package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRunSmall runs both patterns at 50 concurrent requests, as the command
// does, writes the JSON report and checks what does not depend on the
// machine's speed: one result per pattern with every field the report
// promises, every request accounted for, none read as a 200 OK, overshoots
// in order, and CPU, allocations and goroutines measured. The figures are
// for BENCHMARKS.md, not for a test.
func TestRunSmall(t *testing.T) {
	const n = 50
	rep, err := run(config{ns: []int{n}, patterns: []string{"budget", "plain"}, rounds: 1, learn: 1, budget: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "report.json")
	if err := rep.write(name); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		BudgetMs float64          `json:"budget_ms"`
		Results  []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("the report is not JSON: %v", err)
	}
	if doc.BudgetMs != 100 || len(doc.Results) != 2 {
		t.Fatalf("budget_ms %v and %d results, want 100 and 2", doc.BudgetMs, len(doc.Results))
	}
	for i, want := range []string{"budget", "plain"} {
		got := doc.Results[i]
		if got["pattern"] != want || got["concurrency"] != float64(n) {
			t.Errorf("result %d is %v at %v, want %s at %d", i, got["pattern"], got["concurrency"], want, n)
		}
		for _, k := range []string{"overshoot_p50_ms", "overshoot_p99_ms", "overshoot_max_ms", "cpu_ms_per_failure",
			"allocs_per_failure", "dials", "client_dials", "goroutines_peak", "failures", "answers"} {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: the report has no %s", want, k)
			}
		}
	}
	for _, r := range rep.Results {
		total := 0
		for _, c := range r.Answers {
			total += c
		}
		if r.Failures != n || total != n {
			t.Errorf("%s: %d failures and %d answers counted, want %d", r.Pattern, r.Failures, total, n)
		}
		if r.Answers["ok"] != 0 {
			t.Errorf("%s: %d answers were 200 OK from a backend that hangs", r.Pattern, r.Answers["ok"])
		}
		if !(r.OvershootP50Ms <= r.OvershootP99Ms && r.OvershootP99Ms <= r.OvershootMaxMs) {
			t.Errorf("%s: overshoots p50 %v, p99 %v, max %v are out of order", r.Pattern, r.OvershootP50Ms, r.OvershootP99Ms, r.OvershootMaxMs)
		}
		if r.CPUMsPerFailure <= 0 || r.AllocsPerFailure <= 0 || r.GoroutinesPeak < n {
			t.Errorf("%s: CPU %v ms, %v allocations per failure and %d goroutines at peak: not measured",
				r.Pattern, r.CPUMsPerFailure, r.AllocsPerFailure, r.GoroutinesPeak)
		}
	}
	if _, err := run(config{ns: []int{1}, patterns: []string{"nonsense"}, rounds: 1}); err == nil {
		t.Error("an unknown pattern was accepted")
	}
}

// TestRaiseFiles: a limit the process already has is kept, and one beyond
// what the process may set is refused with a message naming the limit.
func TestRaiseFiles(t *testing.T) {
	if err := raiseFiles(16); err != nil {
		t.Errorf("raising the open-file limit to 16: %v", err)
	}
	err := raiseFiles(1 << 40)
	if err == nil {
		t.Fatal("an open-file limit of 2^40 was accepted")
	}
	if msg := err.Error(); !strings.Contains(msg, "open files are needed") || !strings.Contains(msg, "lower -n") {
		t.Errorf("the refusal says %q, which does not say what was needed and what to do", msg)
	}
}
