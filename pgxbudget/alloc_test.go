// The race detector's sync.Pool drops what it holds at random, so allocation
// counts are those of a normal build only: this file is left out under -race
// (make test runs it in its pass without the race detector).

//go:build !race

package pgxbudget_test

import (
	"context"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/pgxbudget"
)

// TestAllocations pins what a statement costs in allocations, each call
// with a budget of its own as in TestOverheadRatio, against the live server:
// plain pgx for reference and pgxbudget's Query, QueryRow and Exec. A change
// that raises one must say why. Not under the race detector, whose sync.Pool
// drops what it holds at random.
func TestAllocations(t *testing.T) {
	p, _ := newPool(t, 1)
	plain, batch := p.Pool(), pgxbudget.WithoutDirectPath(p)
	var x int
	with := func(fn func(ctx context.Context) error) func() {
		return func() {
			ctx, cancel := budget.Start(context.Background(), time.Second)
			defer cancel()
			if err := fn(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	budgetOnly := testing.AllocsPerRun(200, with(func(context.Context) error { return nil }))
	for _, tc := range []struct {
		name string
		want float64
		fn   func(ctx context.Context) error
	}{
		// pgx's own, for reference: the statement cache's Bind and Execute,
		// the context watch, the pool's acquire and release, the row.
		{"plain pgx QueryRow", 16, func(ctx context.Context) error { return plain.QueryRow(ctx, "SELECT 1").Scan(&x) }},
		// The same plus, on pgxbudget's side, the statement and its rows,
		// the settings statement's answer and, most of it (about 18),
		// pgconn's pipeline bookkeeping, which queues every request in a
		// container/list. Through a pgx.Batch it was 10 more.
		{"QueryRow", 37, func(ctx context.Context) error { return p.QueryRow(ctx, "SELECT 1").Scan(&x) }},
		{"Query", 34, func(ctx context.Context) error {
			r, err := p.Query(ctx, "SELECT 1")
			if err != nil {
				return err
			}
			for r.Next() {
			}
			return r.Err()
		}},
		// pgxbudget's former path, kept for the modes and tracers the direct
		// one does not cover. 49 since the lock timeout is a parameter of its
		// own (a second string, boxed in the batch's arguments).
		{"QueryRow through a pgx.Batch", 49, func(ctx context.Context) error {
			return batch.QueryRow(ctx, "SELECT 1").Scan(&x)
		}},
		{"Exec", 31, func(ctx context.Context) error { _, err := p.Exec(ctx, "SELECT 1"); return err }},
	} {
		with(tc.fn)() // prepared on the connection
		got := testing.AllocsPerRun(200, with(tc.fn)) - budgetOnly
		t.Logf("%s: %.0f allocations (besides the budget's %.0f)", tc.name, got, budgetOnly)
		if got > tc.want {
			t.Errorf("%s: %.1f allocations, want at most %.0f", tc.name, got, tc.want)
		}
	}
}
