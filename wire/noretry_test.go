package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/timebudget/budget/wire"
)

func TestFormatBudgetNoRetry(t *testing.T) {
	t.Parallel()
	for _, r := range []wire.NoRetry{wire.NoRetryShed, wire.NoRetryRetried} {
		v, ok := wire.FormatBudgetNoRetry(r)
		back, pok, err := wire.ParseBudgetNoRetry([]string{v})
		if !ok || !pok || err != nil || back != r {
			t.Fatalf("%d -> %q, %v -> %v, %v, %v", r, v, ok, back, pok, err)
		}
	}
	for _, r := range []wire.NoRetry{0, 3, 255} {
		if v, ok := wire.FormatBudgetNoRetry(r); ok || v != "" || r.String() != "" {
			t.Fatalf("FormatBudgetNoRetry(%d) = %q, %v", r, v, ok)
		}
	}
}

func TestParseBudgetNoRetryAllocs(t *testing.T) {
	vals := []string{"retried"}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = wire.ParseBudgetNoRetry(vals) }); n != 0 {
		t.Fatalf("%v allocations per parse, want 0", n)
	}
}

// FuzzBudgetNoRetry: the parser never panics; it accepts exactly one value that is
// "shed" or "retried" with optional spaces or tabs around it, and refuses anything else
// with a ParseError that names the header and quotes at most 32 bytes.
func FuzzBudgetNoRetry(f *testing.F) {
	for _, s := range []string{"", "shed", "retried", " shed\t", "SHED", "shed, retried", "shed\r\nX: y",
		"shed\x00", strings.Repeat("a", 10<<10), "sh\u00e9d", "later"} {
		f.Add(s, "")
		f.Add(s, "shed")
	}
	for _, s := range hostileSeeds {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		vals := []string{a}
		if b != "" {
			vals = append(vals, b)
		}
		r, ok, err := wire.ParseBudgetNoRetry(vals)
		if ok == (err != nil) {
			t.Fatalf("%q: ok %v with err %v", vals, ok, err)
		}
		if err != nil {
			var pe *wire.ParseError
			if r != 0 || !errors.As(err, &pe) || pe.Header != wire.HeaderBudgetNoRetry || pe.Reason == "" || len(pe.Value) > 32 {
				t.Fatalf("%q: %v, error %#v", vals, r, err)
			}
			return
		}
		if len(vals) != 1 || strings.Trim(a, " \t") != r.String() || r.String() == "" {
			t.Fatalf("%q accepted as %v", vals, r)
		}
	})
}
