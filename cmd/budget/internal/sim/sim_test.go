package sim_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/sim"
	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

func load(t testing.TB, path string) *topology.Topology {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	top, err := topology.Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	return top
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	top := load(t, "testdata/geo.yaml")
	cfg := sim.Config{Requests: 2000, Concurrency: 50, Seed: 7, Faults: []sim.Fault{{Service: "geometry", Kind: sim.Slow, Latency: 150e6}}}
	a, err := sim.Run(top, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := sim.Run(top, cfg)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two runs with the same seed differ:\n%+v\n%+v", a, b)
	}
	cfg.Seed = 8
	c, _ := sim.Run(top, cfg)
	if reflect.DeepEqual(a, c) {
		t.Error("a different seed gave the same results")
	}
}

// TestDeterministicAcrossProcesses runs the same seeded simulation in this
// process and in a fresh one (this test binary again), and requires the
// same results: the budget.Ops of the admission pattern keep their windows
// on the virtual clock alone, not on when the process started.
func TestDeterministicAcrossProcesses(t *testing.T) {
	t.Parallel()
	run := func() string {
		// An open loop of 10 requests a second against a geometry that
		// fails half its calls: throttling's and the estimate's windows
		// turn between calls, so a shift of them shows (with windows
		// counted from when the process started, this differed).
		top := load(t, "testdata/geo.yaml")
		res, err := sim.Run(top, sim.Config{Requests: 600, Rate: 10, Seed: 5,
			Faults: []sim.Fault{{Service: "geometry", Kind: sim.Fail, P: 0.5}}})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%+v", res)
	}
	if os.Getenv("SIM_DETERMINISM_CHILD") != "" {
		fmt.Print("RESULT " + run() + "\n")
		return
	}
	// The child starts a good part of a one-second window after this
	// process did, so windows counted from a process's start would differ.
	time.Sleep(300 * time.Millisecond)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestDeterministicAcrossProcesses$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SIM_DETERMINISM_CHILD=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the child process: %v\n%s", err, out)
	}
	_, child, ok := strings.Cut(string(out), "RESULT ")
	child, _, _ = strings.Cut(child, "\n")
	if !ok || child != run() {
		t.Errorf("another process simulated differently:\n%s\n%s", child, run())
	}
}

func TestGeneratedTreeParses(t *testing.T) {
	t.Parallel()
	file, err := os.ReadFile("testdata/tree200.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, sim.Tree(200, 1)) {
		t.Error("testdata/tree200.yaml is not sim.Tree(200, 1); regenerate it")
	}
	top, err := topology.Parse("tree.yaml", sim.Tree(200, 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Names) != 200 {
		t.Errorf("%d services", len(top.Names))
	}
	res, err := sim.Run(top, sim.Config{Requests: 2000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Requests != 2000 || r.InBudget+r.Late+r.Failed < 0.999 {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
}

// BenchmarkTree200 simulates requests through a generated 200-service tree
// under all four patterns; b.N counts requests per pattern.
func BenchmarkTree200(b *testing.B) {
	top, err := topology.Parse("tree.yaml", sim.Tree(200, 1))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	res, err := sim.Run(top, sim.Config{Requests: b.N, Seed: 1, Faults: []sim.Fault{{Service: "s3", Kind: sim.Hang}}})
	if err != nil {
		b.Fatal(err)
	}
	// CPU time says more than wall time on a shared machine: the four
	// patterns run side by side, and other processes take turns.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/req")
	var events int64
	for _, r := range res {
		events += r.Events
	}
	b.ReportMetric(float64(events)/float64(b.N), "events/req")
}
