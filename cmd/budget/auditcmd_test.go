package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestAuditExitCodes(t *testing.T) {
	t.Parallel()
	const dir = "internal/audit/testdata/"
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // substring expected on stdout
		stderr string // substring expected on stderr
	}{
		{"clean", []string{dir + "clean.yaml"}, 0, "", "no findings"},
		{"seed", []string{dir + "seed.yaml"}, 1, "search -> db: 1.5s timeout with 2 retries", "2 findings"},
		{"json", []string{"--format", "json", dir + "seed.yaml"}, 1, `"kind": "inverted"`, "2 findings"},
		{"help", []string{"--help"}, 0, "--format FORMAT", ""},
		{"no file", nil, 2, "", "want one FILE"},
		{"two files", []string{dir + "seed.yaml", dir + "clean.yaml"}, 2, "", "want one FILE"},
		{"missing file", []string{dir + "nothing.yaml"}, 2, "", "no such file"},
		{"bad format", []string{"--format", "xml", dir + "seed.yaml"}, 2, "", `--format "xml"`},
		{"bad flag", []string{"--colour", dir + "seed.yaml"}, 2, "", "-colour"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"audit"}, tt.args...), &stdout, &stderr); code != tt.code {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tt.stdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, stderr.String())
			}
		})
	}
}

func TestAuditJSONIsValid(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	run([]string{"audit", "--format", "json", "internal/audit/testdata/over-budget.yaml"}, &stdout, &stderr)
	var rep struct {
		Entry    string `json:"entry"`
		Findings []struct {
			Caller, Callee, Kind string
		} `json:"findings"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, stdout.String())
	}
	// One finding on each of edge's three calls, which together take 6s of
	// a 3s budget.
	if rep.Entry != "edge" || len(rep.Findings) != 3 {
		t.Fatalf("report %+v", rep)
	}
	for _, f := range rep.Findings {
		if f.Kind != "over-budget" {
			t.Errorf("report %+v", rep)
		}
	}
}

// TestAuditMalformed runs audit on each malformed file: exit status 2 and
// the file, line and column on stderr, nothing on stdout.
func TestAuditMalformed(t *testing.T) {
	t.Parallel()
	const dir = "internal/topology/testdata/bad/"
	tests := []struct{ file, want string }{
		{"syntax", "syntax.yaml:4:1: bad YAML"},
		{"unknown-service", `unknown-service.yaml:6:14: service edge: call: to: unknown service "cache"`},
		{"unknown-field", `unknown-field.yaml:6:31: service edge: call: unknown field "retry"`},
		{"negative-timeout", "negative-timeout.yaml:6:27: service edge: call: timeout: -1s is negative"},
		{"zero-timeout", "zero-timeout.yaml:6:27: service edge: call: timeout: must be more than zero"},
		{"no-unit", `no-unit.yaml:6:27: service edge: call: timeout: "2" has no unit`},
		{"missing-entry", "missing-entry.yaml:1:1: missing entry"},
		{"negative-retries", "negative-retries.yaml:6:40: service edge: call: retries: -1 is outside [0, 100]"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run([]string{"audit", dir + tt.file + ".yaml"}, &stdout, &stderr)
			if code != 2 {
				t.Fatalf("exit code %d, want 2", code)
			}
			if want := "budget audit: " + dir + tt.want; !strings.HasPrefix(stderr.String(), want) {
				t.Errorf("stderr\n got %s\nwant %s", stderr.String(), want)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout should be empty:\n%s", stdout.String())
			}
		})
	}
}
