package drivertest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/sqlbudget"
)

// open connects to the server named by env, skipping outside CI when it is
// not set and failing under CI=true.
func open(t *testing.T, driver, env, example string) *sql.DB {
	t.Helper()
	dsn := os.Getenv(env)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI must run the database tests", env)
		}
		t.Skipf("set %s (e.g. %s) to run against a real server", env, example)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("open %s: %v", env, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("server at %s does not answer: %v", env, err)
	}
	return db
}

func postgres(t *testing.T) *sql.DB {
	return open(t, "pgx", "BUDGET_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
}

func mariadb(t *testing.T) *sql.DB {
	return open(t, "mysql", "BUDGET_TEST_MYSQL", "root@tcp(127.0.0.1:3306)/test")
}

func requireExpiry(t *testing.T, err error, stage string) {
	t.Helper()
	var be *budget.Error
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &be) ||
		be.Outcome != budget.OutcomeExpired || be.Stage != stage {
		t.Fatalf("err = %v, want an expiry of %s", err, stage)
	}
}

// TestServerStopsStatement runs a long sleep under a 250 ms budget through
// each dialect on a real server: the server stops it itself (its timeout
// error comes back, not the client's deadline), and the connection keeps
// working. The reserve is 50 ms rather than the default 20 ms so that the
// server's answer beats the client's deadline on a loaded machine under the
// race detector, where a round trip can take 20 ms.
func TestServerStopsStatement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		db      func(*testing.T) *sql.DB
		dialect sqlbudget.Dialect
		sleep   string
	}{
		{"postgres", postgres, sqlbudget.PostgreSQL, "SELECT pg_sleep(5)::text"},
		{"mariadb", mariadb, sqlbudget.MariaDB, "SELECT SLEEP(5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw := tc.db(t)
			raw.SetMaxOpenConns(1)
			db := sqlbudget.New(raw, tc.dialect, sqlbudget.WithReserve(50*time.Millisecond))
			for _, method := range []string{"QueryRowContext", "ExecContext"} {
				ctx, cancel := budget.Start(context.Background(), 250*time.Millisecond)
				dl, _ := ctx.Deadline()
				var err error
				if method == "ExecContext" {
					_, err = db.ExecContext(ctx, tc.sleep)
				} else {
					var s string
					err = db.QueryRowContext(ctx, tc.sleep).Scan(&s)
				}
				late := time.Since(dl)
				cancel()
				requireExpiry(t, err, tc.dialect.String())
				if !tc.dialect.IsTimeout(errors.Unwrap(err)) {
					t.Errorf("%s: the server did not stop it itself (returned %v after the deadline): %v", method, late, errors.Unwrap(err))
				}
				if late > 50*time.Millisecond {
					t.Errorf("%s returned %v after the deadline", method, late)
				}
			}
			ctx, cancel := budget.Start(context.Background(), 5*time.Second)
			defer cancel()
			var one int
			if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("SELECT 1 afterwards: %d, %v", one, err)
			}
		})
	}
}

// TestMariaDBStopsAtDeadline checks the processlist: a SELECT SLEEP(5)
// under a 100 ms budget is no longer running on the server shortly after the
// deadline (50 ms of margin for a loaded machine). The statement runs on a
// connection whose client does not wait for it (a goroutine abandons it),
// so only the server's own limit can stop it.
func TestMariaDBStopsAtDeadline(t *testing.T) {
	t.Parallel()
	raw := mariadb(t)
	db := sqlbudget.New(raw, sqlbudget.MariaDB)
	mark := fmt.Sprintf("sqlbudget_%d_%d", os.Getpid(), time.Now().UnixNano())
	ctx, cancel := budget.Start(context.Background(), 100*time.Millisecond)
	defer cancel()
	dl, _ := ctx.Deadline()
	done := make(chan error, 1)
	go func() {
		_, err := db.ExecContext(ctx, "SELECT SLEEP(5) AS "+mark)
		done <- err
	}()
	running := func() int {
		var n int
		err := raw.QueryRowContext(context.Background(),
			"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND INFO NOT LIKE '%PROCESSLIST%'",
			"%"+mark+"%").Scan(&n)
		if err != nil {
			t.Fatalf("processlist: %v", err)
		}
		return n
	}
	time.Sleep(time.Until(dl.Add(-60 * time.Millisecond)))
	if n := running(); n != 1 {
		t.Errorf("%d statements in the processlist 60ms before the deadline, want 1", n)
	}
	time.Sleep(time.Until(dl.Add(50 * time.Millisecond)))
	if n := running(); n != 0 {
		t.Errorf("statement still in the processlist 50ms after the deadline")
	}
	requireExpiry(t, <-done, "mariadb")
}

// TestPostgresSettingsEnd checks that the timeouts end with the statement's
// transaction.
func TestPostgresSettingsEnd(t *testing.T) {
	t.Parallel()
	raw := postgres(t)
	raw.SetMaxOpenConns(1)
	db := sqlbudget.New(raw, sqlbudget.PostgreSQL)
	ctx, cancel := budget.Start(context.Background(), 5*time.Second)
	defer cancel()
	var inside string
	if err := db.QueryRowContext(ctx, "SHOW statement_timeout").Scan(&inside); err != nil {
		t.Fatal(err)
	}
	if inside == "0" || !strings.HasSuffix(inside, "s") {
		t.Errorf("statement_timeout inside = %q, want the budget", inside)
	}
	var after string
	if err := raw.QueryRowContext(context.Background(), "SHOW statement_timeout").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != "0" {
		t.Errorf("statement_timeout after = %q, want 0", after)
	}
}

// TestRefusedNeverReachesServer gives a statement less than a millisecond.
func TestRefusedNeverReachesServer(t *testing.T) {
	t.Parallel()
	raw := mariadb(t)
	db := sqlbudget.New(raw, sqlbudget.MariaDB)
	before := raw.Stats().OpenConnections
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()
	ctx = budget.WithReserve(ctx, time.Second-500*time.Microsecond)
	_, err := db.ExecContext(ctx, "SELECT 1")
	if !errors.Is(err, budget.ErrInsufficient) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrInsufficient", err)
	}
	if s := raw.Stats(); s.OpenConnections != before || s.InUse != 0 {
		t.Errorf("stats = %+v: a refused statement must not take a connection", s)
	}
}
