package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestServiceAgainstPostgreSQL builds the program and runs it against the
// PostgreSQL server BUDGET_TEST_POSTGRES names: the database answers the
// first request, the cache rung the second (PostgreSQL stops the slow query
// at the time the budget left it), and a slow pricing service makes the third
// an honest 504 within the budget, whose body shows nothing internal.
func TestServiceAgainstPostgreSQL(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("BUDGET_TEST_POSTGRES")
	if dsn == "" {
		const msg = "set BUDGET_TEST_POSTGRES (such as postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the service against PostgreSQL"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	bin := filepath.Join(t.TempDir(), "service")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dsn)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the service failed: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []string{
		"GET /product?id=1 → 200 widget at 12.50 EUR (name from product.db)",
		"GET /product?id=1&db=slow → 200 widget at 12.50 EUR (name from product.cache)",
		"GET /product?id=1&pricing=slow → 504 the request ran out of time",
	}
	if len(got) != len(want) {
		t.Fatalf("the service printed %d lines, want %d:\n%s", len(got), len(want), out)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d:\n got %s\nwant %s…", i+1, got[i], want[i])
		}
	}
	// A 504 is a public answer: it names no internal URL (the pricing
	// service's, with its query string, was in the error's message).
	for _, line := range got {
		if _, answer, _ := strings.Cut(line, "→"); strings.Contains(answer, "http://") || strings.Contains(answer, "delay=") {
			t.Errorf("an answer shows an internal URL: %s", line)
		}
	}
}

// TestReadmeShowsTheProgram checks that the README's "Build a service"
// section shows this program as it is, so the tested code is the code a
// reader copies.
func TestReadmeShowsTheProgram(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(src)+"```\n") {
		t.Error("README.md does not show examples/service/main.go as it is: copy the file into its \"Build a service\" block")
	}
}
