package pgxbudget_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/timebudget/budget"
)

// TestOverheadRatio measures SELECT 1 through pgxbudget and through plain
// pgx on the same pool, alternating call by call so both see the same
// machine, and compares the medians. The budget's statement travels in the
// same round trip, so the server's extra work (one set_config call) and
// pgx's batch path are what it costs. The bound is 1.10, the target, under
// BUDGET_OVERHEAD_STRICT=1; otherwise 1.5, a bound that still catches an
// extra round trip (a ratio near 2). BENCHMARKS.md reports the measured ratio,
// which is above the target (about 1.15 against a local server, where a
// round trip is about 45 µs). With -short it makes 400 calls of each
// instead of 2,000, against the same bound.
func TestOverheadRatio(t *testing.T) {
	p, _ := newPool(t, 1)
	plain := p.Pool()
	ctx, cancel := budget.Start(context.Background(), time.Minute)
	defer cancel()
	n := 2000
	if testing.Short() {
		n = 400
	}
	var a, b []time.Duration
	var x int
	for i := range n + 100 {
		s := time.Now()
		if err := plain.QueryRow(ctx, "SELECT 1").Scan(&x); err != nil {
			t.Fatal(err)
		}
		m := time.Now()
		if err := p.QueryRow(ctx, "SELECT 1").Scan(&x); err != nil {
			t.Fatal(err)
		}
		e := time.Now()
		if i >= 100 { // warmed up: statements prepared on the connection
			a, b = append(a, m.Sub(s)), append(b, e.Sub(m))
		}
	}
	slices.Sort(a)
	slices.Sort(b)
	ratio := float64(b[n/2]) / float64(a[n/2])
	t.Logf("SELECT 1 p50: plain pgx %v, pgxbudget %v, ratio %.3f; p90: %v, %v", a[n/2], b[n/2], ratio, a[n*9/10], b[n*9/10])
	limit := 1.5
	if os.Getenv("BUDGET_OVERHEAD_STRICT") == "1" {
		limit = 1.10
	}
	if ratio > limit {
		t.Errorf("p50 ratio %.3f, want at most %.2f", ratio, limit)
	}
}
