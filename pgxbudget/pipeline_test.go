package pgxbudget_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/timebudget/budget"
)

// preparedByUs counts the statements the package has prepared on the
// pool's only connection.
func preparedByUs(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'pgxbudget\\_%'").Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDirectPathStatementCache runs more distinct statements than the
// connection's statement cache holds: every answer is right, and the
// statements prepared on the server stay within the cache's capacity (plus
// the settings statement), the evicted ones being deallocated.
func TestDirectPathStatementCache(t *testing.T) {
	t.Parallel()
	cfg := poolConfig(t, 1, appName(t))
	cfg.ConnConfig.StatementCacheCapacity = 3
	p := newPoolFrom(t, cfg)
	ctx, cancel := budget.Start(context.Background(), 5*time.Second)
	defer cancel()
	queries := []string{"SELECT $1::int + 1", "SELECT $1::int + 2", "SELECT $1::int + 3", "SELECT $1::int + 4", "SELECT $1::int + 5"}
	for round := range 3 {
		for i, q := range queries {
			var got int
			if err := p.QueryRow(ctx, q, 10*round).Scan(&got); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if want := 10*round + i + 1; got != want {
				t.Fatalf("%s with %d = %d, want %d", q, 10*round, got, want)
			}
			if n := preparedByUs(t, p.Pool()); n > 3+1 {
				t.Fatalf("%d statements prepared on the server, want at most 4 (cache of 3 and the settings)", n)
			}
		}
	}
	if got := p.Pool().Stat().NewConnsCount(); got != 1 {
		t.Errorf("NewConnsCount = %d, want 1", got)
	}
}

// TestDirectPathRecovers covers what the direct path cannot know in
// advance: its statements deallocated behind its back, SQL naming a
// statement prepared with pgx.Conn.Prepare, pgx's query options, a result
// type changed under a prepared statement, and a wrong argument count.
func TestDirectPathRecovers(t *testing.T) {
	t.Parallel()
	cfg := poolConfig(t, 1, appName(t))
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Prepare(ctx, "plus_one", "SELECT $1::int + 1"); err != nil {
			return err
		}
		_, err := c.Prepare(ctx, "plus two", "SELECT $1::int + 2")
		return err
	}
	p := newPoolFrom(t, cfg)
	ctx, cancel := budget.Start(context.Background(), 5*time.Second)
	defer cancel()
	one := func(name, sql string, args ...any) int {
		t.Helper()
		var n int
		if err := p.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return n
	}

	one("warm-up", "SELECT $1::int", 1)
	if _, err := p.Pool().Exec(ctx, "DEALLOCATE ALL"); err != nil {
		t.Fatal(err)
	}
	if got := one("after DEALLOCATE ALL", "SELECT $1::int", 7); got != 7 {
		t.Errorf("after DEALLOCATE ALL: %d, want 7", got)
	}
	if _, err := p.Exec(ctx, "SELECT $1::int", 1); err != nil {
		t.Errorf("Exec after DEALLOCATE ALL: %v", err)
	}

	// DEALLOCATE ALL took AfterConnect's statements too: start afresh.
	p.Pool().Reset()
	if got := one("prepared name", "plus_one", 1); got != 2 {
		t.Errorf("plus_one(1) = %d, want 2", got)
	}
	for range 2 { // the second time from the cache's memory of the name
		if got := one("prepared name with a space", "plus two", 1); got != 3 {
			t.Errorf("plus two(1) = %d, want 3", got)
		}
	}
	if got := one("named arguments", "SELECT @x::int", pgx.NamedArgs{"x": 5}); got != 5 {
		t.Errorf("named arguments: %d, want 5", got)
	}

	var n int
	err := p.QueryRow(ctx, "SELECT $1::int", 1, 2).Scan(&n)
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("two arguments for one parameter: err = %v, want an error", err)
	}

	table := pgx.Identifier{"pgxbudget_direct_" + appName(t)[len("pgxbudget-"):]}.Sanitize()
	if _, err := p.Pool().Exec(ctx, "CREATE TABLE "+table+" (a int)"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = p.Pool().Exec(context.Background(), "DROP TABLE "+table) }()
	if _, err := p.Exec(ctx, "INSERT INTO "+table+" VALUES ($1)", 1); err != nil {
		t.Fatal(err)
	}
	sel := "SELECT * FROM " + table
	var a int64
	if err := p.QueryRow(ctx, sel).Scan(&a); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Pool().Exec(ctx, "ALTER TABLE "+table+" ALTER a TYPE bigint"); err != nil {
		t.Fatal(err)
	}
	err = p.QueryRow(ctx, sel).Scan(&a)
	var pe *pgconn.PgError
	if err != nil && !(errors.As(err, &pe) && pe.Code == "0A000") {
		t.Fatalf("after the type change: %v, want success or SQLSTATE 0A000", err)
	}
	if err := p.QueryRow(ctx, sel).Scan(&a); err != nil || a != 1 {
		t.Errorf("after the type change, once more: %d, %v; want 1, nil", a, err)
	}
}

// TestDirectPathInTransaction runs statements of a transaction through the
// direct path, including one the server times out: the transaction's
// settings statement carries idle_in_transaction_session_timeout too.
func TestDirectPathInTransaction(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 1)
	ctx, cancel := budget.Start(context.Background(), 5*time.Second)
	defer cancel()
	tx, err := p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var v string
	if err := tx.QueryRow(ctx, "SELECT current_setting($1)", "idle_in_transaction_session_timeout").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v == "0" {
		t.Errorf("idle_in_transaction_session_timeout = 0 in a budgeted transaction")
	}
	if _, err := tx.Exec(ctx, "SELECT $1::int", 1); err != nil {
		t.Fatal(err)
	}
	short, cancel2 := budget.Start(ctx, 200*time.Millisecond)
	defer cancel2()
	_, err = tx.Exec(short, "SELECT pg_sleep($1)", 5)
	requireExpiry(t, err, "postgres")
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.Pool().Stat().NewConnsCount(); got != 1 {
		t.Errorf("NewConnsCount = %d, want 1", got)
	}
}
