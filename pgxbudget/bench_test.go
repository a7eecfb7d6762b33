package pgxbudget_test

import (
	"context"
	"testing"
	"time"

	"github.com/timebudget/budget"
)

// benchSelect1 runs run under a budget of its own, one second, as a request
// would: the budget is pushed down like any other.
func benchSelect1(b *testing.B, run func(ctx context.Context) error) {
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		err := run(ctx)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSelect1Plain is the baseline: SELECT 1 through pgxpool with the
// same budget in the context, enforced by pgx on the client only.
func BenchmarkSelect1Plain(b *testing.B) {
	p, _ := newPool(b, 1)
	plain := p.Pool()
	benchSelect1(b, func(ctx context.Context) error {
		var n int
		return plain.QueryRow(ctx, "SELECT 1").Scan(&n)
	})
}

// BenchmarkSelect1Budget is SELECT 1 through pgxbudget: the budget is pushed
// down as statement_timeout and lock_timeout in the same round trip.
func BenchmarkSelect1Budget(b *testing.B) {
	p, _ := newPool(b, 1)
	benchSelect1(b, func(ctx context.Context) error {
		var n int
		return p.QueryRow(ctx, "SELECT 1").Scan(&n)
	})
}
