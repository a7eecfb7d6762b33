package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string // substring expected on stdout
		stderr   string // substring expected on stderr
		noStdout bool
	}{
		{name: "no command", args: nil, code: 2, stderr: "Usage:", noStdout: true},
		{name: "unknown command", args: []string{"simulate"}, code: 2, stderr: `unknown command "simulate"`, noStdout: true},
		{name: "help", args: []string{"help"}, code: 0, stdout: "budget demo --help"},
		{name: "demo help", args: []string{"demo", "--help"}, code: 0, stdout: "--budget DURATION"},
		{name: "demo -h", args: []string{"demo", "-h"}, code: 0, stdout: "--scenario LIST"},
		{name: "vet in usage", args: []string{"--help"}, code: 0, stdout: "budget vet ./..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.code {
				t.Fatalf("run(%q) = %d, want %d; stderr:\n%s", tt.args, code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tt.stdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, stderr.String())
			}
			if tt.noStdout && stdout.Len() > 0 {
				t.Errorf("stdout should be empty, got:\n%s", stdout.String())
			}
		})
	}
}

func TestBadFlagValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string // the error must name the flag
	}{
		{[]string{"--budget", "soon"}, "--budget"},
		{[]string{"--budget", "5ms"}, "--budget"},
		{[]string{"--budget", "1m"}, "--budget"},
		{[]string{"--requests", "0"}, "--requests"},
		{[]string{"--requests", "many"}, "--requests"},
		{[]string{"--concurrency", "-3"}, "--concurrency"},
		{[]string{"--fault", "geometry"}, "--fault"},
		{[]string{"--fault", "database=hang"}, "--fault"},
		{[]string{"--fault", "payment=slow"}, "--fault"},
		{[]string{"--fault", "payment=slowdown:1s@2"}, "--fault"},
		{[]string{"--fault", "payment=explode"}, "--fault"},
		{[]string{"--scenario", "sim"}, "--scenario"},
		{[]string{"--out", ""}, "--out"},
		{[]string{"--colour"}, "--colour"},
		{[]string{"extra"}, "extra"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"demo"}, tt.args...), &stdout, &stderr)
			if code != 2 {
				t.Fatalf("exit code %d, want 2", code)
			}
			if msg := stderr.String(); !strings.Contains(msg, tt.want) || !strings.HasPrefix(msg, "budget demo: ") {
				t.Errorf("error does not name %s:\n%s", tt.want, msg)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout should be empty, got:\n%s", stdout.String())
			}
		})
	}
}

// TestRunWritesReports runs the command end to end at the smallest scale and
// checks that it prints the table and writes both reports where --out says.
func TestRunWritesReports(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "out")
	var stdout, stderr bytes.Buffer
	code := run([]string{"demo", "--scenario", "geo", "--requests", "4", "--concurrency", "4",
		"--budget", "60ms", "--out", dir}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{"per-call timeouts", "shared deadline", "deadline + admission", "no timeout", "report.html"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout does not mention %q:\n%s", want, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "demo: done") {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}
	for _, f := range []string{"report.html", "report.json"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
