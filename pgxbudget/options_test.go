package pgxbudget_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/timebudget/budget"
)

// TestPgxOptionArguments is the regression test for pgx's own option
// arguments (a QueryExecMode, result formats, a QueryRewriter such as
// pgx.NamedArgs) in a budgeted call, which failed with "mismatched param
// and argument count" and cost the connection. Each gives the same answer
// as on the plain pool, out of and in a transaction, and the statement is
// still stopped by the server at its budget.
func TestPgxOptionArguments(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 1)
	type call struct {
		name string
		sql  string
		args []any
		exec bool // Exec takes modes and rewriters, not result formats
	}
	var calls []call
	for _, m := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec,
		pgx.QueryExecModeDescribeExec, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeCacheStatement} {
		calls = append(calls, call{m.String(), "SELECT $1::int + 1", []any{m, 41}, true})
		calls = append(calls, call{m.String() + "+NamedArgs", "SELECT @a::int + 1", []any{m, pgx.NamedArgs{"a": 41}}, true})
	}
	calls = append(calls,
		call{"NamedArgs", "SELECT @a::int + 1", []any{pgx.NamedArgs{"a": 41}}, true},
		call{"StrictNamedArgs", "SELECT @a::int + 1", []any{pgx.StrictNamedArgs{"a": 41}}, true},
		call{"QueryResultFormats text", "SELECT $1::int + 1", []any{pgx.QueryResultFormats{pgx.TextFormatCode}, 41}, false},
		call{"QueryResultFormats binary", "SELECT $1::int + 1", []any{pgx.QueryResultFormats{pgx.BinaryFormatCode}, 41}, false},
		call{"QueryResultFormatsByOID", "SELECT $1::int + 1",
			[]any{pgx.QueryResultFormatsByOID{pgtype.Int4OID: pgx.TextFormatCode}, 41}, false},
	)
	bg := context.Background()
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			var want int
			if err := p.Pool().QueryRow(bg, c.sql, c.args...).Scan(&want); err != nil || want != 42 {
				t.Fatalf("plain pool: %d, %v", want, err)
			}
			ctx, cancel := budget.Start(bg, 5*time.Second)
			defer cancel()
			var got int
			if err := p.QueryRow(ctx, c.sql, c.args...).Scan(&got); err != nil || got != want {
				t.Errorf("QueryRow: %d, %v, want %d", got, err, want)
			}
			if c.exec {
				if _, err := p.Exec(ctx, c.sql, c.args...); err != nil {
					t.Errorf("Exec: %v", err)
				}
			}
			tx, err := p.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(bg) }()
			got = 0
			if err := tx.QueryRow(ctx, c.sql, c.args...).Scan(&got); err != nil || got != want {
				t.Errorf("Tx.QueryRow: %d, %v, want %d", got, err, want)
			}
			if c.exec {
				if _, err := tx.Exec(ctx, c.sql, c.args...); err != nil {
					t.Errorf("Tx.Exec: %v", err)
				}
			}
			if err := tx.Commit(ctx); err != nil {
				t.Errorf("Commit: %v", err)
			}
			// Still bounded by the server.
			sctx, scancel := budget.Start(bg, 300*time.Millisecond)
			defer scancel()
			sleep, sql := []any{c.args[0], 5}, "SELECT pg_sleep($1)::text"
			if _, named := c.args[len(c.args)-1].(pgx.QueryRewriter); named {
				sleep, sql = c.args, "SELECT pg_sleep(5 + 0 * @a::int)::text"
			}
			var s string
			err = p.QueryRow(sctx, sql, sleep...).Scan(&s)
			var pe *pgconn.PgError
			if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &pe) || pe.Code != "57014" {
				t.Errorf("pg_sleep(5) under a 300 ms budget: %v, want the server's statement_timeout", err)
			}
		})
	}
	if got := p.Pool().Stat().NewConnsCount(); got != 1 {
		t.Errorf("NewConnsCount = %d, want 1", got)
	}
}
