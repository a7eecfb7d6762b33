package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The test binary is also the edge and the backend of TestRunProcs.
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(serveRole(role))
	}
	goleak.VerifyTestMain(m)
}

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
	if err := raiseFiles(16, "a test"); err != nil {
		t.Errorf("raising the open-file limit to 16: %v", err)
	}
	err := raiseFiles(1<<40, "a test")
	if err == nil {
		t.Fatal("an open-file limit of 2^40 was accepted")
	}
	if msg := err.Error(); !strings.Contains(msg, "open files are needed") || !strings.Contains(msg, "lower -n") {
		t.Errorf("the refusal says %q, which does not say what was needed and what to do", msg)
	}
}

// TestRunProcs runs both patterns with the edge and the backend as
// processes of their own (-procs always) at 20 concurrent requests and
// checks the JSON report: three processes said, every request accounted
// for, each process's CPU, allocations and goroutines measured and summed,
// and no child left running afterwards.
func TestRunProcs(t *testing.T) {
	const n = 20
	started.Lock()
	before := len(started.pids)
	started.Unlock()
	rep, err := run(config{ns: []int{n}, patterns: []string{"budget", "plain"}, rounds: 2, learn: 1, budget: 100 * time.Millisecond, procs: true})
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
	var doc Report
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("the report is not JSON: %v", err)
	}
	if doc.Processes != 3 || !strings.Contains(doc.Description, "sums over the three processes") || len(doc.Results) != 2 {
		t.Fatalf("processes %d, description %q, %d results; want 3, the sums said, 2", doc.Processes, doc.Description, len(doc.Results))
	}
	for i, r := range doc.Results {
		if want := []string{"budget", "plain"}[i]; r.Pattern != want || r.Concurrency != n {
			t.Errorf("result %d is %s at %d, want %s at %d", i, r.Pattern, r.Concurrency, want, n)
		}
		total := 0
		for _, c := range r.Answers {
			total += c
		}
		if r.Failures != 2*n || total != 2*n || r.Answers["ok"] != 0 {
			t.Errorf("%s: %d failures and %d answers (%v), want %d and none 200 OK", r.Pattern, r.Failures, total, r.Answers, 2*n)
		}
		if len(r.PerProcess) != 3 {
			t.Fatalf("%s: %d processes' figures, want 3 (%+v)", r.Pattern, len(r.PerProcess), r.PerProcess)
		}
		var cpu, allocs float64
		peak := 0
		for _, p := range r.PerProcess {
			if p.CPUMsPerFailure <= 0 || p.AllocsPerFailure <= 0 || p.GoroutinesPeak <= 0 {
				t.Errorf("%s, %s process: CPU %v ms, %v allocations per failure, %d goroutines at peak: not measured",
					r.Pattern, p.Role, p.CPUMsPerFailure, p.AllocsPerFailure, p.GoroutinesPeak)
			}
			cpu += p.CPUMsPerFailure
			allocs += p.AllocsPerFailure
			peak += p.GoroutinesPeak
		}
		if !near(cpu, r.CPUMsPerFailure) || !near(allocs, r.AllocsPerFailure) || peak != r.GoroutinesPeak || peak < n {
			t.Errorf("%s: CPU %v ms, %v allocations, %d goroutines are not the processes' sums %v, %v, %d",
				r.Pattern, r.CPUMsPerFailure, r.AllocsPerFailure, r.GoroutinesPeak, cpu, allocs, peak)
		}
	}
	started.Lock()
	pids := started.pids[before:]
	started.Unlock()
	if len(pids) != 4 {
		t.Errorf("%d children started, want an edge and a backend per pattern", len(pids))
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("child %d is still running after the run", pid)
		}
	}
}

// TestRunProcsTwoEdges: with -edges 2 the client's requests go to two edge
// processes in turn, and the report sums over all four processes, with a
// line for each edge.
func TestRunProcsTwoEdges(t *testing.T) {
	const n = 20
	rep, err := run(config{ns: []int{n}, patterns: []string{"budget"}, rounds: 1, learn: 1, budget: 100 * time.Millisecond, procs: true, edges: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Processes != 4 || rep.Edges != 2 || !strings.Contains(rep.Description, "sums over the 4 processes") {
		t.Fatalf("processes %d, edges %d, description %q; want 4, 2 and the sums over 4 said", rep.Processes, rep.Edges, rep.Description)
	}
	r := rep.Results[0]
	if r.Failures != n || r.Answers["ok"] != 0 {
		t.Errorf("%d failures (%v), want %d and none 200 OK", r.Failures, r.Answers, n)
	}
	var roles []string
	for _, p := range r.PerProcess {
		roles = append(roles, p.Role)
		if p.CPUMsPerFailure <= 0 || p.GoroutinesPeak <= 0 {
			t.Errorf("%s process: CPU %v ms, %d goroutines at peak: not measured (did it get requests?)", p.Role, p.CPUMsPerFailure, p.GoroutinesPeak)
		}
	}
	if want := []string{"client", "backend", "edge 1", "edge 2"}; !slices.Equal(roles, want) {
		t.Errorf("per-process lines %v, want %v", roles, want)
	}
	if _, err := run(config{ns: []int{n}, patterns: []string{"budget"}, rounds: 1, budget: 100 * time.Millisecond, edges: 2}); err == nil {
		t.Error("two edges in one process were accepted")
	}
}

func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

// TestChildFailing: a child that cannot start is an error naming its role
// and saying what the child said.
func TestChildFailing(t *testing.T) {
	_, err := startChild("edge", "nonsense", 1, time.Second, "")
	if err == nil {
		t.Fatal("an edge of an unknown pattern started")
	}
	if msg := err.Error(); !strings.Contains(msg, "the edge process did not start") || !strings.Contains(msg, "unknown pattern") {
		t.Errorf("the error says %q, which does not name the role and the cause", msg)
	}
	if _, err := chooseProcs("sometimes", 1, 1, 1); err == nil {
		t.Error("-procs sometimes was accepted")
	}
}

// An "other" answer is traced by its text: each distinct text is counted,
// and at most maxOthers texts are kept, so a run that fails the same way
// 10,000 times does not grow the report.
func TestOthersAreTraced(t *testing.T) {
	r := &rig{}
	for i := range maxOthers + 3 {
		if got := r.other(fmt.Sprintf("error %d", i)); got != "other" {
			t.Fatalf("other returned %q, want \"other\"", got)
		}
	}
	r.other("error 0")
	if len(r.others) != maxOthers || r.others["error 0"] != 2 || r.others["error 1"] != 1 {
		t.Fatalf("others %v: want %d texts, \"error 0\" twice", r.others, maxOthers)
	}
	if _, ok := r.others[fmt.Sprintf("error %d", maxOthers)]; ok {
		t.Fatalf("others %v: kept more than %d texts", r.others, maxOthers)
	}
	rep := &Report{Results: []Result{{Pattern: "budget", Concurrency: 3, Others: map[string]int{"status 502": 2}}}}
	if tab := rep.table(); !strings.Contains(tab, "budget at 3, other answer (2): status 502") {
		t.Fatalf("the table does not say what the other answers were:\n%s", tab)
	}
}

// TestWarmUpOpensAConnectionPerRequest: the warm-up opens n connections at
// each hop, so that a measured burst of n needs no dial that a warmer pool
// would have spared. Its requests used to be answered 20 ms after arrival,
// so they overlapped only as much as the client sent them together: at 1,000
// on a busy machine the edge's pool held a few hundred connections fewer than
// a burst needed, and the first measured round dialled them (180 of the
// edge's 203 dials in one run, with no connection closed).
func TestWarmUpOpensAConnectionPerRequest(t *testing.T) {
	const n = 20
	r, err := newRig("budget", n, 100*time.Millisecond, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	// The client's requests go out one at a time, each after the last one's
	// 20 ms would have ended: only requests that wait for one another overlap.
	if err := r.setHang(false); err != nil {
		t.Fatal(err)
	}
	answers := make(chan string, n)
	for range n {
		go func() {
			_, answer := r.call(10 * time.Second)
			answers <- answer
		}()
		time.Sleep(25 * time.Millisecond)
	}
	for range n {
		if a := <-answers; a != "ok" {
			t.Fatalf("a warm-up request was answered %q, want ok", a)
		}
	}
	if got, got2 := r.cdials.Load(), r.dials.Load(); got != n || got2 != n {
		t.Errorf("the warm-up of %d requests opened %d connections to the edge and %d to the backend, want %d each", n, got, got2, n)
	}
}

// TestARefusalToSendIsCounted: the budget Transport's refusal to send a
// request with too little time left is counted as "refused", not as an
// unexplained "other".
func TestARefusalToSendIsCounted(t *testing.T) {
	refusal := fmt.Errorf("Get %q: %w", "http://edge/", &budget.Error{Stage: "edge", Outcome: budget.OutcomeInsufficient})
	if !tooLittleLeft(refusal) {
		t.Errorf("%v is not counted as a refusal to send", refusal)
	}
	for _, err := range []error{nil, context.DeadlineExceeded, &budget.Error{Stage: "edge", Outcome: budget.OutcomeExpired}} {
		if tooLittleLeft(err) {
			t.Errorf("%v is counted as a refusal to send", err)
		}
	}
}
