package audit_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/timebudget/budget/cmd/budget/internal/audit"
	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGolden audits every topology in testdata and compares the text and
// JSON output with NAME.golden and NAME.json.golden.
func TestGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file  string
		kinds []audit.Kind // the kinds of the findings, in order
	}{
		{"clean", nil},
		{"seed", []audit.Kind{audit.OverBudget, audit.Inverted}},
		{"inverted", []audit.Kind{audit.Inverted}},
		{"over-budget", []audit.Kind{audit.OverBudget, audit.OverBudget, audit.OverBudget}},
		{"sequence", []audit.Kind{audit.Sequence, audit.Sequence}},
		{"below-p99", []audit.Kind{audit.BelowP99}},
		{"no-timeout", []audit.Kind{audit.NoTimeout}},
		{"cycle", []audit.Kind{audit.Cycle}},
		{"fallback", []audit.Kind{audit.OverBudget, audit.OverBudget, audit.OverBudget, audit.OverBudget}},
		{"shop", []audit.Kind{audit.Sequence, audit.Inverted}},
		{"conflict", []audit.Kind{audit.Conflict}},
		// timeout: budget is what the library recommends: reported only
		// where the budget cannot cover the call.
		{"budget", nil},
		{"budget-short", []audit.Kind{audit.Conflict}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", tt.file+".yaml")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			top, err := topology.Parse(path, data)
			if err != nil {
				t.Fatal(err)
			}
			rep := audit.Check(top)
			var kinds []audit.Kind
			for _, f := range rep.Findings {
				kinds = append(kinds, f.Kind)
				if f.Line < 1 || f.Col < 1 || f.Suggestion == "" {
					t.Errorf("finding without a position or a suggestion: %+v", f)
				}
			}
			if !equal(kinds, tt.kinds) {
				t.Errorf("kinds %v, want %v", kinds, tt.kinds)
			}
			var text, js bytes.Buffer
			if err := rep.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if err := rep.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", tt.file+".golden"), text.Bytes())
			golden(t, filepath.Join("testdata", tt.file+".json.golden"), js.Bytes())
		})
	}
}

func equal(a, b []audit.Kind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestSuggestionsSatisfyTheInvariant applies the suggested timeouts of each
// file in testdata and audits again: one round leaves nothing to suggest.
// It took as many rounds as the graph was deep when a suggestion for a
// caller could make its callee's call too long.
func TestSuggestionsSatisfyTheInvariant(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"seed", "inverted", "over-budget", "sequence", "below-p99", "no-timeout", "fallback", "shop", "conflict", "cycle", "clean", "budget", "budget-short"} {
		path := filepath.Join("testdata", file+".yaml")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		top, err := topology.Parse(path, data)
		if err != nil {
			t.Fatal(err)
		}
		checkFixedPoint(t, string(data), top)
	}
}

func TestSuggestedTimeoutIsTheLargest(t *testing.T) {
	t.Parallel()
	// 2 retries, 50ms backoff, 2s given: t + 2(t + 50ms) < 2s gives t < 633.3ms.
	src := "entry: a\nbudget: 2s\nservices:\n  a:\n    calls: [{to: b, timeout: 1s, retries: 2, backoff: 50ms}]\n  b: {}\n"
	top, err := topology.Parse("x", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	rep := audit.Check(top)
	if len(rep.Findings) != 1 || rep.Findings[0].SuggestedTimeoutMs != 633 {
		t.Fatalf("findings %+v", rep.Findings)
	}
	if !strings.HasPrefix(rep.Findings[0].String(), "a -> b: ") {
		t.Errorf("line %q", rep.Findings[0])
	}
	// Exactly at the limit fails too: the invariant is strict.
	src = "entry: a\nbudget: 2s\nservices:\n  a:\n    calls: [{to: b, timeout: 975ms, retries: 1, backoff: 50ms}]\n  b: {}\n"
	if top, err = topology.Parse("x", []byte(src)); err != nil {
		t.Fatal(err)
	}
	if rep := audit.Check(top); len(rep.Findings) != 1 || rep.Findings[0].SuggestedTimeoutMs != 974 {
		t.Fatalf("at the limit: %+v", rep.Findings)
	}
}
