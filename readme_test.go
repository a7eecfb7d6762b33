package budget_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeFirstBlockBuilds compiles and runs the README's first Go code
// block as a program of its own, against this checkout.
func TestReadmeFirstBlockBuilds(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "```go\n")
	if !ok {
		t.Fatal("README.md has no ```go block")
	}
	code, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("README.md's first ```go block is not closed")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module readme\n\ngo 1.26\n\nrequire github.com/timebudget/budget v0.0.0\n\nreplace github.com/timebudget/budget => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's first block does not run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "answer from the cache instead: budget: geometry not started") {
		t.Fatalf("unexpected output:\n%s", out)
	}
}
