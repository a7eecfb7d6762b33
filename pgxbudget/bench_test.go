package pgxbudget_test

import (
	"context"
	"testing"
	"time"

	"github.com/timebudget/budget"
)

func benchSelect1(b *testing.B, run func(ctx context.Context) error) {
	b.ReportAllocs()
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	for b.Loop() {
		if err := run(ctx); err != nil {
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
