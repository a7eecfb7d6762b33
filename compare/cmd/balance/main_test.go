package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The command writes the figures of every variant asked for as JSON, with
// the fields the comparison is read by, and a table naming each variant.
func TestRunWritesJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "balance.json")
	var out bytes.Buffer
	err := run([]string{"-json", path, "-variants", "round_robin,budget_aware", "-workers", "4",
		"-healthy", "200ms", "-slow", "200ms", "-recovered", "200ms"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		for _, k := range []string{"variant", "in_budget", "p99_ms", "sent_to_slow", "recovery_ms"} {
			if _, ok := r[k]; !ok {
				t.Errorf("run %v lacks %q", r["variant"], k)
			}
		}
		if v, _ := r["variant"].(string); !strings.Contains(out.String(), v) {
			t.Errorf("the table does not name %q:\n%s", v, out.String())
		}
	}
	if err := run([]string{"-variants", "random"}, &out); err == nil {
		t.Error("an unknown variant was accepted")
	}
}
