package pgxbudget_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/pgxbudget"
)

// TestMisconfiguredPool is the regression test for a Pool without a
// pgxpool.Pool, which failed three ways (a plain error from Wrap(nil), a
// panic from a nil *Pool, and a zero Pool): every method reports an error
// matching budget.ErrMisconfigured that says what was wrong, with or without
// a deadline, and Close does nothing.
func TestMisconfiguredPool(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    *pgxbudget.Pool
		says string
	}{
		{"Wrap(nil)", pgxbudget.Wrap(nil), "Wrap was given a nil"},
		{"zero Pool", &pgxbudget.Pool{}, "zero Pool"},
		{"nil *Pool", nil, "nil *pgxbudget.Pool"},
	} {
		for _, bounded := range []bool{false, true} {
			ctx := context.Background()
			if bounded {
				var cancel context.CancelFunc
				ctx, cancel = budget.Start(ctx, time.Second)
				defer cancel()
			}
			calls := map[string]func() error{
				"Query": func() error { _, err := tc.p.Query(ctx, "SELECT 1"); return err },
				"QueryRow": func() error {
					var n int
					return tc.p.QueryRow(ctx, "SELECT 1").Scan(&n)
				},
				"Exec": func() error { _, err := tc.p.Exec(ctx, "SELECT 1"); return err },
				"SendBatch": func() error {
					b := &pgx.Batch{}
					b.Queue("SELECT 1")
					br := tc.p.SendBatch(ctx, b)
					_, err := br.Exec()
					if cerr := br.Close(); cerr == nil || err == nil {
						t.Errorf("%s SendBatch: Exec %v, Close %v, want both to fail", tc.name, err, cerr)
					}
					return err
				},
				"Begin": func() error { _, err := tc.p.Begin(ctx); return err },
				"Ping":  func() error { return tc.p.Ping(ctx) },
				"Acquire": func() error {
					c, err := tc.p.Acquire(ctx)
					if c != nil {
						t.Errorf("%s Acquire: a connection with %v", tc.name, err)
					}
					return err
				},
				"CopyFrom": func() error {
					_, err := tc.p.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"n"}, pgx.CopyFromRows(nil))
					return err
				},
				"BeginTx": func() error {
					_, err := tc.p.BeginTx(ctx, pgx.TxOptions{})
					return err
				},
			}
			for method, call := range calls {
				t.Run(tc.name+"/"+method, func(t *testing.T) {
					err := call()
					if !errors.Is(err, budget.ErrMisconfigured) || !strings.Contains(err.Error(), tc.says) {
						t.Errorf("err = %v, want a match for budget.ErrMisconfigured saying %q", err, tc.says)
					}
				})
			}
		}
		tc.p.Close()
		if tc.p.Stat() != nil {
			t.Errorf("%s: Stat() != nil", tc.name)
		}
		if tc.p.Pool() != nil {
			t.Errorf("%s: Pool() != nil", tc.name)
		}
	}
}
