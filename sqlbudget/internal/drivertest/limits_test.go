package drivertest_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/sqlbudget"
)

// withParam opens the server named by env again with a session setting in
// its DSN (a startup parameter for PostgreSQL, a SET at connection time for
// go-sql-driver/mysql), as an operator would configure it.
func withParam(t *testing.T, open func(*testing.T) *sql.DB, driver, env, param string) *sql.DB {
	t.Helper()
	open(t) // skips or fails as the other tests do when env is not set
	dsn := os.Getenv(env)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	db, err := sql.Open(driver, dsn+sep+param)
	if err != nil {
		t.Fatalf("open %s: %v", env, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestLongBudgetClamped is the regression test for budgets longer than the
// server's maximum limit: PostgreSQL refused a statement_timeout over
// 2³¹−1 ms (SQLSTATE 22023) and MariaDB interrupted a statement whose
// max_statement_time was over a year, so every statement failed.
func TestLongBudgetClamped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		db      func(*testing.T) *sql.DB
		dialect sqlbudget.Dialect
	}{
		{"postgres", postgres, sqlbudget.PostgreSQL},
		{"mariadb", mariadb, sqlbudget.MariaDB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := sqlbudget.New(tc.db(t), tc.dialect)
			for _, long := range []time.Duration{25 * 24 * time.Hour, 2200000000 * time.Millisecond, 100 * 365 * 24 * time.Hour} {
				ctx, cancel := budget.Start(context.Background(), long)
				var one int
				err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
				cancel()
				if err != nil || one != 1 {
					t.Errorf("SELECT 1 with a budget of %v: %d, %v", long, one, err)
				}
			}
		})
	}
}

// TestLimitOnlyLowers is the regression test for pushed limits that raised
// the operator's: a session limit of 1 s stops a 2.5 s sleep at 1 s on the
// plain *sql.DB, and must under a 10 s budget too.
func TestLimitOnlyLowers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		db      func(*testing.T) *sql.DB
		dialect sqlbudget.Dialect
		sleep   string
	}{
		{"postgres", func(t *testing.T) *sql.DB {
			return withParam(t, postgres, "pgx", "BUDGET_TEST_POSTGRES", "statement_timeout=1000")
		}, sqlbudget.PostgreSQL, "SELECT pg_sleep(2.5)::text"},
		{"mariadb", func(t *testing.T) *sql.DB {
			return withParam(t, mariadb, "mysql", "BUDGET_TEST_MYSQL", "max_statement_time=1")
		}, sqlbudget.MariaDB, "SELECT SLEEP(2.5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := sqlbudget.New(tc.db(t), tc.dialect)
			ctx, cancel := budget.Start(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			var s string
			err := db.QueryRowContext(ctx, tc.sleep).Scan(&s)
			took := time.Since(start)
			if !tc.dialect.IsTimeout(err) {
				t.Fatalf("err = %v after %v, want the session's limit to stop it", err, took)
			}
			if took > 2*time.Second {
				t.Errorf("stopped after %v, want about the session's 1 s", took)
			}
		})
	}
}

// TestNoDeadlineAfterDeadline: a statement without a deadline after one
// with a 100 ms budget, on the same connection, runs under the session's
// settings (each statement's limit is scoped to it: PostgreSQL's to its
// transaction, MariaDB's SET STATEMENT to the statement).
func TestNoDeadlineAfterDeadline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		db      func(*testing.T) *sql.DB
		dialect sqlbudget.Dialect
		sleep   string
	}{
		{"postgres", postgres, sqlbudget.PostgreSQL, "SELECT pg_sleep(0.3)::text"},
		{"mariadb", mariadb, sqlbudget.MariaDB, "SELECT SLEEP(0.3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw := tc.db(t)
			raw.SetMaxOpenConns(1)
			db := sqlbudget.New(raw, tc.dialect)
			ctx, cancel := budget.Start(context.Background(), 100*time.Millisecond)
			_, err := db.ExecContext(ctx, "SELECT 1")
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			var s string
			if err := db.QueryRowContext(context.Background(), tc.sleep).Scan(&s); err != nil {
				t.Fatalf("statement without a deadline after one with a 100 ms budget: %v", err)
			}
		})
	}
}

// TestPostgresLockWaitIsLockTimeout: a statement blocked on a lock for its
// whole budget is stopped by lock_timeout (SQLSTATE 55P03, an expiry), which
// is set below statement_timeout so that it can fire first.
func TestPostgresLockWaitIsLockTimeout(t *testing.T) {
	t.Parallel()
	raw := postgres(t)
	ctx := context.Background()
	holder, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Close() }()
	if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_lock(434343)"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = holder.ExecContext(ctx, "SELECT pg_advisory_unlock(434343)") }()
	db := sqlbudget.New(raw, sqlbudget.PostgreSQL)
	bctx, cancel := budget.Start(ctx, 500*time.Millisecond)
	defer cancel()
	_, err = db.ExecContext(bctx, "SELECT pg_advisory_lock(434343)")
	requireExpiry(t, err, "postgres")
	var s interface{ SQLState() string }
	if !errors.As(err, &s) || s.SQLState() != "55P03" {
		t.Fatalf("err = %v, want the server's lock_timeout (55P03)", err)
	}
}
