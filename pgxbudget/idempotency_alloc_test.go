// Allocation counts are those of a normal build only (see alloc_test.go).

//go:build !race

package pgxbudget_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/idempotency"
	"github.com/timebudget/budget/pgxbudget"
)

// TestIdempotencyStoreAllocations pins what the store's calls allocate
// against the live server, each with a budget of its own as a request
// brings, beside pgxbudget's QueryRow of SELECT 1 (37, TestAllocations). A
// change that raises one must say why.
func TestIdempotencyStoreAllocations(t *testing.T) {
	p, _ := newPool(t, 1)
	s := newIdemStore(t, p, pgxbudget.IdempotencyOptions{})
	rec := &idempotency.Record{Replayable: true, Status: 201,
		Header: map[string][]string{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"ch_1"}`)}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "alloc-" + strconv.Itoa(i)
	}
	with := func(fn func(ctx context.Context, i int) error) func() {
		i := 0
		return func() {
			ctx, cancel := budget.Start(context.Background(), time.Second)
			defer cancel()
			if err := fn(ctx, i); err != nil {
				t.Fatal(err)
			}
			i++
		}
	}
	budgetOnly := testing.AllocsPerRun(200, with(func(context.Context, int) error { return nil }))
	for _, tc := range []struct {
		name string
		want float64
		fn   func(ctx context.Context, i int) error
	}{
		// Beside the 37 of a QueryRow: the reservation's token, the four
		// arguments, the scan of seven columns (a fingerprint copied out).
		{"Reserve, a new key", 53, func(ctx context.Context, i int) error {
			_, _, err := s.Reserve(ctx, keys[i], [32]byte{})
			return err
		}},
		// An Exec of five arguments, the header encoded.
		{"Complete", 36, func(ctx context.Context, i int) error { return s.Complete(ctx, keys[i], rec) }},
		// As a new key, plus the answer read back: its body and its
		// header decoded (the map, the value slice and strings).
		{"Reserve, a done key", 60, func(ctx context.Context, i int) error {
			_, _, err := s.Reserve(ctx, keys[i], [32]byte{})
			return err
		}},
		// A QueryRow of six columns, the answer decoded as above.
		{"Get", 52, func(ctx context.Context, i int) error {
			_, _, err := s.Get(ctx, keys[i])
			return err
		}},
	} {
		got := testing.AllocsPerRun(200, with(tc.fn)) - budgetOnly
		if got > tc.want {
			t.Errorf("%s: %v allocations, want at most %v", tc.name, got, tc.want)
		}
	}
}
