package pgxbudget_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/timebudget/budget/pgxbudget"
)

const envPostgres = "BUDGET_TEST_POSTGRES"

// dsn returns the test server's URL, skipping the test when it is not set
// outside CI and failing it under CI=true.
func dsn(t testing.TB) string {
	t.Helper()
	u := os.Getenv(envPostgres)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI must run the PostgreSQL tests", envPostgres)
		}
		t.Skipf("set %s (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run against PostgreSQL", envPostgres)
	}
	return u
}

// appName returns an application_name unique to this test, by which
// pg_stat_activity finds its sessions.
func appName(t testing.TB) string {
	return fmt.Sprintf("pgxbudget-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
}

// poolConfig parses the test server's URL into a pool configuration of
// maxConns connections named app.
func poolConfig(t testing.TB, maxConns int32, app string) *pgxpool.Config {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn(t))
	if err != nil {
		t.Fatalf("parse %s: %v", envPostgres, err)
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	return cfg
}

// newPool returns a configured, wrapped pool closed at the end of the test.
func newPool(t testing.TB, maxConns int32, opts ...pgxbudget.Option) (*pgxbudget.Pool, string) {
	t.Helper()
	app := appName(t)
	p := newPoolFrom(t, poolConfig(t, maxConns, app), opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Pool().Ping(ctx); err != nil {
		t.Fatalf("PostgreSQL at %s does not answer: %v", envPostgres, err)
	}
	return p, app
}

// newPoolFrom returns the pool New makes of cfg, closed at the end of the
// test.
func newPoolFrom(t testing.TB, cfg *pgxpool.Config, opts ...pgxbudget.Option) *pgxbudget.Pool {
	t.Helper()
	p, err := pgxbudget.New(context.Background(), cfg, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// monitor returns a plain connection for watching pg_stat_activity.
func monitor(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatalf("connect monitor: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// activeSleeps counts the sessions named app still sleeping in pg_sleep
// (wait event PgSleep): a statement the server has stopped no longer counts,
// even while its backend is still failing to answer a dead client.
func activeSleeps(t testing.TB, mon *pgx.Conn, app string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n int
	err := mon.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE application_name = $1 AND state = 'active' AND wait_event = 'PgSleep'`, app).Scan(&n)
	if err != nil {
		t.Fatalf("pg_stat_activity: %v", err)
	}
	return n
}
