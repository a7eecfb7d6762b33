package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/timebudget/budget/cmd/budget/vet"
)

// TestVet runs budget vet on packages under testdata and checks its output
// and exit code: findings as file:line:col: message (check) and 1, nothing
// and 0, or a clear error and 2.
func TestVet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string // lines expected on stdout, in order
		stderr string   // substring expected on stderr
	}{
		{
			name: "findings",
			args: []string{"./testdata/vet/bad"},
			code: 1,
			stdout: []string{
				"testdata/vet/bad/bad.go:12:15: context.WithTimeout derived from context.Background() although ctx is in scope: the caller's deadline and cancellation are lost; derive it from ctx (bgdeadline)",
				"testdata/vet/bad/bad.go:23:9: http.ListenAndServe builds a server with no timeouts: a client that sends its headers slowly holds a connection forever; use an http.Server with ReadHeaderTimeout (httpserver)",
				"testdata/vet/bad/bad_test.go:13:16: context.WithTimeout derived from context.TODO() although ctx is in scope",
				"budget vet: 1 package, 2 files, 7 checks: 3 findings, 0 suppressed by //budget:ignore",
			},
		},
		{
			name: "suppressed",
			args: []string{"./testdata/vet/ignored"},
			code: 1,
			stdout: []string{
				"testdata/vet/ignored/ignored.go:28:15: context.WithTimeout derived from context.Background() although ctx is in scope",
				"budget vet: 1 package, 1 file, 7 checks: 1 finding, 2 suppressed by //budget:ignore",
			},
		},
		{
			name: "one check",
			args: []string{"--checks", "httpserver", "./testdata/vet/bad"},
			code: 1,
			stdout: []string{"testdata/vet/bad/bad.go:23:9: http.ListenAndServe builds a server with no timeouts",
				"budget vet: 1 package, 2 files, 1 check: 1 finding, 0 suppressed by //budget:ignore"},
		},
		// A clean run says what it checked: budget vet printing nothing at
		// all left a user wondering whether it ran, and on what.
		{name: "clean", args: []string{"./testdata/vet/clean"}, code: 0,
			stdout: []string{"budget vet: 1 package, 1 file, 7 checks: 0 findings, 0 suppressed by //budget:ignore"}},
		{name: "missing directory", args: []string{"./testdata/vet/nothing"}, code: 2, stderr: "budget vet: stat "},
		{name: "unknown package", args: []string{"example.invalid/nothing"}, code: 2, stderr: "example.invalid/nothing"},
		{name: "type error", args: []string{"./testdata/vet/broken"}, code: 2, stderr: "broken.go:3:23: cannot use"},
		{name: "unknown check", args: []string{"--checks", "bgdeadline,nosuch", "."}, code: 2, stderr: `--checks: unknown check "nosuch"`},
		{name: "unknown flag", args: []string{"--fix"}, code: 2, stderr: "flag provided but not defined: -fix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"vet"}, tt.args...), &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("budget vet %s = %d, want %d; stdout:\n%s\nstderr:\n%s", tt.args, code, tt.code, stdout.String(), stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
			if stdout.Len() == 0 {
				lines = nil
			}
			if len(lines) != len(tt.stdout) {
				t.Fatalf("got %d lines on stdout, want %d:\n%s", len(lines), len(tt.stdout), stdout.String())
			}
			for i, want := range tt.stdout {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("line %d:\n got %s\nwant %s", i+1, lines[i], want)
				}
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, stderr.String())
			}
			if tt.code != 2 && stderr.Len() > 0 {
				t.Errorf("stderr should be empty, got:\n%s", stderr.String())
			}
		})
	}
}

// TestVetHelpExplainsEveryCheck checks that budget vet --help documents
// every analyzer and the exit codes.
func TestVetHelpExplainsEveryCheck(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"vet", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("budget vet --help = %d; stderr:\n%s", code, stderr.String())
	}
	for _, a := range vet.Analyzers {
		if !strings.Contains(stdout.String(), "\n"+a.Name+": ") {
			t.Errorf("help does not explain %s", a.Name)
		}
	}
	for _, want := range []string{"Exit status: 0", "--checks LIST", "-vettool"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help does not mention %q", want)
		}
	}
}
