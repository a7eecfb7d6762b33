package pgxbudget_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/pgxbudget"
)

// viaProxy points cfg's connections at a proxy that holds the server's
// answers back for delay.
func viaProxy(t testing.TB, cfg *pgxpool.Config, delay time.Duration) {
	t.Helper()
	target := net.JoinHostPort(cfg.ConnConfig.Host, fmt.Sprint(cfg.ConnConfig.Port))
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = newDelayProxy(t, target, delay).Addr()
	cfg.ConnConfig.Fallbacks = nil
}

// closeWithin closes p and fails the test if that takes longer than d: a
// connection that never comes back to the pool makes Close hang.
func closeWithin(t *testing.T, p *pgxbudget.Pool, d time.Duration) {
	t.Helper()
	if !boundedClose(p, d) {
		t.Fatalf("Pool.Close still waiting after %v: a connection was never released", d)
	}
}

// boundedClose closes p, giving up after d.
func boundedClose(p *pgxbudget.Pool, d time.Duration) bool {
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// waitIdle waits up to d until no connection of p is acquired or being
// opened, and returns how many still are.
func waitIdle(p *pgxbudget.Pool, d time.Duration) int32 {
	busy := func() int32 { s := p.Pool().Stat(); return s.AcquiredConns() + s.ConstructingConns() }
	for start := time.Now(); busy() > 0 && time.Since(start) < d; {
		time.Sleep(5 * time.Millisecond)
	}
	return busy()
}

// requireStopped fails the test unless every connection of p is back in
// the pool within releaseBound and no session named app is still sleeping.
// The two tell a lost cancel from a slow one: a statement nobody stopped
// (no statement_timeout, a cancel request never sent or sent before the
// statement reached the server) is still in longSleep, whereas a slow
// cancel request only keeps a connection acquired for a while.
func requireStopped(t *testing.T, p *pgxbudget.Pool, mon *pgx.Conn, app string) {
	t.Helper()
	left := waitIdle(p, releaseBound)
	if n := activeSleeps(t, mon, app); n != 0 {
		t.Errorf("%d sessions still sleep in %q once the connections are back: statements nobody stopped", n, longSleep)
	}
	if left > 0 {
		s := p.Pool().Stat()
		t.Fatalf("%d connections still acquired and %d being opened %v after the last statement returned",
			s.AcquiredConns(), s.ConstructingConns(), releaseBound)
	}
}

// TestHealthCheckPingOutlivesDeadline is the regression test for a panic
// (close of closed channel) with pgxpool's default health check: a
// connection idle for over a second is pinged under the acquiring caller's
// deadline; when the ping outlives it, the cancel state it left behind was
// never taken (pgxpool puts such a connection back without AfterRelease),
// and the next statement on the connection whose deadline passed mid-flight
// closed the same channel again. The server's answers come 40 ms late
// through a proxy, so the ping outlives a 20 ms budget and the server's own
// timeout answers after the deadline.
func TestHealthCheckPingOutlivesDeadline(t *testing.T) {
	t.Parallel()
	mon := monitor(t)
	app := appName(t)
	cfg := poolConfig(t, 1, app)
	viaProxy(t, cfg, 40*time.Millisecond)
	p, err := pgxbudget.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Not deferred Close: after a panic it would wait forever for the
	// connection the panic kept.
	t.Cleanup(func() { boundedClose(p, releaseBound) })
	bg, cancel := context.WithTimeout(context.Background(), serverWait)
	defer cancel()
	if _, err := p.Exec(bg, "SELECT 1"); err != nil {
		t.Fatalf("first statement: %v", err)
	}

	// Idle for over a second: the next Acquire pings, under a 20 ms budget.
	time.Sleep(1100 * time.Millisecond)
	ctx, cancel1 := budget.Start(context.Background(), 20*time.Millisecond)
	_, err = p.Exec(ctx, "SELECT 1")
	cancel1()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("statement behind a ping that outlives its budget: err = %v, want an expiry", err)
	}
	// The ping finishes in the background and its cancel settles.
	time.Sleep(500 * time.Millisecond)

	// A statement stopped by the server, whose answer arrives after the
	// deadline: the connection's canceler is called again. The budget
	// leaves room for what may come first on a loaded machine (the ping's
	// cancel request still settling, or the connection it cost being
	// replaced, each of which took over a second there): with 300 ms the
	// statement was sometimes refused before it was sent. The answer still
	// arrives after the deadline, 40 ms late against a 10 ms reserve.
	for i := range 3 {
		ctx, cancel2 := budget.Start(context.Background(), 2*time.Second)
		_, err = p.Exec(ctx, longSleep)
		cancel2()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("statement %d: err = %v, want an expiry", i, err)
		}
	}
	var one int
	if err := p.QueryRow(bg, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 afterwards: %d, %v", one, err)
	}
	requireStopped(t, p, mon, app)
	closeWithin(t, p, releaseBound)
}

// TestDefaultPoolBurst runs 200 longSleep statements at once (fewer
// when the server allows fewer, except under CI) with 50 ms budgets on a
// pool with pgxpool's default settings, health checks on, once with its
// default MaxConns and twice with as many connections as calls, in two
// rounds: before each burst every connection is back in the pool and has
// been idle for over a second, so each is pinged under its caller's
// deadline, and in the second round each connection is one the first
// round's expiries left behind (or its replacement). Directly, and through
// a proxy that delays the server's answers by 40 ms, so the pings outlive
// the budgets. No call may panic or return anything but an expiry or a
// refusal; after each round no statement is left sleeping on the server
// and no connection stays acquired; then the server holds exactly the
// pool's sessions, and Close returns.
//
// Many pings outlive their caller's deadline by more than the cancel grace
// (through the proxy on a loaded machine, nearly all of them), so pgx
// closes those connections, and each close sends a cancel request of its
// own: on a loaded two-core machine a hundred of those, each a new
// connection and a new server process, keep the closed connections counted
// as acquired for seconds. Hence the waits of releaseBound, and longSleep as
// the statement: a lost cancel is told from a slow one by the statement
// still sleeping on the server. That churn is most of what the test costs,
// and it grows with the rounds: two give every case what it needs, a burst
// on fresh connections and one on those it left (a third only repeated
// the second). The calls stay 200: with 100, through the proxy, the pings
// outlived the cancel grace far less often, and pgx closed few
// connections or none.
func TestDefaultPoolBurst(t *testing.T) {
	for _, tc := range []struct {
		name        string
		delay       time.Duration
		defaultSize bool // pgxpool's default MaxConns rather than one per call
	}{
		{"default MaxConns", 0, true},
		{"direct", 0, false},
		{"delayed", 40 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mon := monitor(t)
			n := freeSessions(t, mon, 200)
			app := appName(t)
			cfg := poolConfig(t, int32(n), app)
			if tc.defaultSize {
				def, err := pgxpool.ParseConfig(dsn(t))
				if err != nil {
					t.Fatal(err)
				}
				cfg.MaxConns = def.MaxConns
			}
			if tc.delay > 0 {
				viaProxy(t, cfg, tc.delay)
			}
			p, err := pgxbudget.New(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { boundedClose(p, releaseBound) })
			openAll(t, p, cfg.MaxConns)
			const rounds = 2
			var expired, refused int
			for round := range rounds {
				if round > 0 {
					requireStopped(t, p, mon, app)
				}
				time.Sleep(1100 * time.Millisecond) // past the health check's idle second
				r := burst(n, func(ctx context.Context) error {
					_, err := p.Exec(ctx, longSleep)
					return err
				}, 50*time.Millisecond)
				for i, err := range r.errs {
					switch {
					case errors.Is(err, budget.ErrInsufficient):
						refused++
					case errors.Is(err, context.DeadlineExceeded):
						expired++
					default:
						t.Fatalf("call %d: err = %v, want an expiry or a refusal", i, err)
					}
				}
			}
			t.Logf("%d x %d calls: %d expired, %d refused; %d connections opened in all",
				rounds, n, expired, refused, p.Pool().Stat().NewConnsCount())
			requireStopped(t, p, mon, app)
			ctx, cancel := context.WithTimeout(context.Background(), serverWait)
			defer cancel()
			var one int
			if err := p.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("SELECT 1 afterwards: %d, %v", one, err)
			}
			// Every session the server holds for the pool is one the pool
			// knows (a connection lost by the pool would still be there,
			// however long the test waited; the backend of a connection
			// closed a moment ago takes a while to go on a loaded machine).
			total := p.Pool().Stat().TotalConns()
			if got := sessions(t, mon, app, int(total), releaseBound); got != int(total) {
				t.Errorf("the server holds %d sessions for the pool, which has %d connections", got, total)
			}
			closeWithin(t, p, releaseBound)
			if got := sessions(t, mon, app, 0, releaseBound); got != 0 {
				t.Errorf("%d sessions still open on the server after Close", got)
			}
		})
	}
}

// openAll makes p open all its n connections, each acquired at once
// until all are, and puts them back idle: a warm-up whose statements
// merely overlapped in time would, on a slow machine, reuse connections
// instead, and leave the burst to open the rest under its deadlines.
func openAll(t *testing.T, p *pgxbudget.Pool, n int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serverWait)
	defer cancel()
	var acquired, held sync.WaitGroup
	acquired.Add(int(n))
	for range n {
		held.Go(func() {
			c, err := p.Pool().Acquire(ctx)
			acquired.Done()
			if err != nil {
				t.Errorf("warm-up: %v", err)
				return
			}
			acquired.Wait()
			c.Release()
		})
	}
	held.Wait()
	if t.Failed() {
		t.FailNow()
	}
	waitIdle(p, releaseBound) // a release runs AfterRelease in the background
	if s := p.Pool().Stat(); s.TotalConns() != n || s.IdleConns() != n {
		t.Fatalf("after the warm-up the pool has %d connections, %d idle; want %d, all idle", s.TotalConns(), s.IdleConns(), n)
	}
}

// freeSessions returns how many sessions the test may open: want, or what
// the server allows less ten (superuser slots, the monitor), failing under
// CI when that is less than want.
func freeSessions(t *testing.T, mon *pgx.Conn, want int) int {
	t.Helper()
	var maxConns, used int
	ctx, cancel := context.WithTimeout(context.Background(), serverWait)
	defer cancel()
	if err := mon.QueryRow(ctx, "SELECT setting::int FROM pg_settings WHERE name = 'max_connections'").Scan(&maxConns); err != nil {
		t.Fatal(err)
	}
	if err := mon.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'").Scan(&used); err != nil {
		t.Fatal(err)
	}
	n := min(want, maxConns-used-10)
	if n < want && os.Getenv("CI") == "true" {
		t.Fatalf("only %d sessions free on the server (max_connections %d, %d in use), want %d", n, maxConns, used, want)
	}
	if n < 20 {
		t.Fatalf("only %d sessions free on the server (max_connections %d, %d in use)", n, maxConns, used)
	}
	return n
}

// sessions counts the server's sessions named app, waiting up to d for the
// count to become want (a closed connection's backend takes a moment to go).
func sessions(t *testing.T, mon *pgx.Conn, app string, want int, d time.Duration) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+serverWait)
	defer cancel()
	var n int
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if err := mon.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			t.Fatalf("pg_stat_activity: %v", err)
		}
		if n == want || time.Since(start) > d {
			return n
		}
	}
}

// TestConfigureKeepsHooks: Configure installs a PrepareConn, which makes
// pgxpool ignore a BeforeAcquire; both hooks a caller set are still called.
func TestConfigureKeepsHooks(t *testing.T) {
	t.Parallel()
	for _, hook := range []string{"PrepareConn", "BeforeAcquire"} {
		t.Run(hook, func(t *testing.T) {
			t.Parallel()
			cfg := poolConfig(t, 1, appName(t))
			var calls atomic.Int32
			if hook == "PrepareConn" {
				cfg.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) { calls.Add(1); return true, nil }
			} else {
				//lint:ignore SA1019 the deprecated hook is what this case tests
				cfg.BeforeAcquire = func(context.Context, *pgx.Conn) bool { calls.Add(1); return true }
			}
			p := newPoolFrom(t, cfg)
			ctx, cancel := budget.Start(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := p.Exec(ctx, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			if calls.Load() == 0 {
				t.Errorf("the caller's %s was not called", hook)
			}
		})
	}
}
