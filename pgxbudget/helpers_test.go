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

// longSleep is the statement the tests expect to be stopped (by the
// server's statement_timeout or by a cancel request): it would sleep far
// longer than any bound a test waits, so that a statement nobody stopped is
// still sleeping, unmistakably, when the test looks (activeSleeps), however
// slow the machine is. A shorter sleep ends by itself within the bounds
// below and would hide a lost cancel.
const longSleep = "SELECT pg_sleep(60)"

// releaseBound is how long, after the last statement returned, the tests
// wait for every connection to be back in the pool, every backend of a
// closed connection to be gone, and Close to return. The longest wait that
// is not a defect is pgx's own cleanup of a connection it closed (pgconn's
// asyncClose, which pgxpool's destructor waits for, the connection counted
// as acquired meanwhile): a cancel request, which is a new connection and a
// new server process, then the server closing the session, both under one
// 15 s deadline. A burst of about a hundred such cancel requests on a
// two-core machine at load 15 was seen to take over 5 s. 30 s is twice
// pgx's deadline, and half of longSleep, so a statement nobody stopped is
// still sleeping when the bound runs out.
const releaseBound = 30 * time.Second

// serverWait bounds what a test asks of the server outside any budget
// (connecting a monitor, reading pg_stat_activity): long enough for a
// loaded machine, where a new connection was seen to take over 5 s while
// a burst of others was being opened; a server that does not answer still
// fails the test.
const serverWait = 30 * time.Second

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
	ctx, cancel := context.WithTimeout(context.Background(), serverWait)
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
	ctx, cancel := context.WithTimeout(context.Background(), serverWait)
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
	ctx, cancel := context.WithTimeout(context.Background(), serverWait)
	defer cancel()
	var n int
	err := mon.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE application_name = $1 AND state = 'active' AND wait_event = 'PgSleep'`, app).Scan(&n)
	if err != nil {
		t.Fatalf("pg_stat_activity: %v", err)
	}
	return n
}
