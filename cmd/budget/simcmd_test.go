package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimBadInput(t *testing.T) {
	t.Parallel()
	const geo = "internal/sim/testdata/geo.yaml"
	const bad = "internal/topology/testdata/bad/"
	tests := []struct {
		name string
		args []string
		want string // on stderr, after "budget sim: "
	}{
		{"bad YAML", []string{bad + "syntax.yaml"}, bad + "syntax.yaml:4:1: bad YAML"},
		{"unknown service", []string{bad + "unknown-service.yaml"}, bad + `unknown-service.yaml:6:14: service edge: call: to: unknown service "cache"`},
		{"negative timeout", []string{bad + "negative-timeout.yaml"}, bad + "negative-timeout.yaml:6:27: service edge: call: timeout: -1s is negative"},
		{"unknown field", []string{bad + "unknown-field.yaml"}, bad + `unknown-field.yaml:6:31: service edge: call: unknown field "retry"`},
		{"cycle", []string{"internal/sim/testdata/bad/cycle.yaml"}, "internal/sim/testdata/bad/cycle.yaml:9:9: calls form a cycle a -> b -> a, which cannot be simulated"},
		{"fault without kind", []string{"--fault", "geometry", geo}, `--fault "geometry" is not SERVICE=KIND`},
		{"fault on unknown service", []string{"--fault", "payment=hang", geo}, `--fault "payment=hang": unknown service "payment"`},
		{"unknown fault", []string{"--fault", "geometry=explode", geo}, `unknown fault "explode"`},
		{"slow without duration", []string{"--fault", "geometry=slow", geo}, "slow needs a duration"},
		{"fail without P", []string{"--fault", "geometry=fail:2", geo}, "fail needs a probability in (0, 1]"},
		{"fault ends before it starts", []string{"--fault", "geometry=hang@5s-2s", geo}, `--fault "geometry=hang@5s-2s": the fault ends (2s) before it starts (5s)`},
		{"fault window not durations", []string{"--fault", "geometry=hang@2-5", geo}, `start "2" is not a duration`},
		{"fault share not K/N", []string{"--fault", "geometry=hang:3/2@2s-5s", geo}, `"3/2" is not K/N`},
		{"error with argument", []string{"--fault", "geometry=error:0.5", geo}, "error takes no argument but :K/N"},
		{"bad horizon", []string{"--horizon", "-1s", geo}, `--horizon: "-1s" is not a duration`},
		{"two faults on one service", []string{"--fault", "geometry=hang", "--fault", "geometry=fail:0.5", geo}, `two faults on "geometry"`},
		{"no file", nil, "want one FILE, got 0"},
		{"two files", []string{geo, geo}, "want one FILE, got 2"},
		{"missing file", []string{"nothing.yaml"}, "no such file"},
		{"zero requests", []string{"--requests", "0", geo}, "--requests"},
		{"bad rate", []string{"--rate", "fast", geo}, "--rate"},
		{"bad seed", []string{"--seed", "-1", geo}, "--seed"},
		{"unknown flag", []string{"--colour", geo}, "-colour"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"sim", "--out", t.TempDir()}, tt.args...), &stdout, &stderr)
			if code != 2 {
				t.Fatalf("exit code %d, want 2; stderr:\n%s", code, stderr.String())
			}
			if msg := stderr.String(); !strings.HasPrefix(msg, "budget sim: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("stderr does not say %q:\n%s", tt.want, msg)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout should be empty:\n%s", stdout.String())
			}
		})
	}
}

func TestSimHelp(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"sim", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	for _, flag := range []string{"--requests", "--rate", "--concurrency", "--seed", "--workers", "--fault", "--horizon", "--out"} {
		if !strings.Contains(stdout.String(), flag+" ") {
			t.Errorf("sim usage does not explain %s", flag)
		}
	}
}

// TestSimWritesReports runs the command end to end on the demo's geo
// topology and checks the table and both reports.
func TestSimWritesReports(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nested")
	var stdout, stderr bytes.Buffer
	code := run([]string{"sim", "internal/sim/testdata/geo.yaml", "--requests", "500", "--concurrency", "20",
		"--fault", "geometry=hang", "--seed", "3", "--out", dir}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{"per-call timeouts", "shared deadline", "deadline + admission", "no timeout", "faults: geometry=hang", "report.html"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout does not mention %q:\n%s", want, stdout.String())
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Seed    uint64 `json:"seed"`
		Results []struct {
			Pattern  string  `json:"pattern"`
			InBudget float64 `json:"in_budget"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Seed != 3 || len(rep.Results) != 4 || rep.Results[2].Pattern != "admission" || rep.Results[2].InBudget < 0.9 {
		t.Errorf("report.json: %+v", rep)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(html), "<svg"); n != 3 {
		t.Errorf("report.html has %d inline SVG charts, want 3", n)
	}
}
