package pgxbudget_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/pgxbudget"
)

// methods runs sql through each way a statement reaches the server:
// Query, QueryRow, Exec, SendBatch, and Exec in a transaction begun under
// the same context.
var methods = []struct {
	name string
	run  func(ctx context.Context, p *pgxbudget.Pool, sql string) error
}{
	{"Query", func(ctx context.Context, p *pgxbudget.Pool, sql string) error {
		rows, err := p.Query(ctx, sql)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		return rows.Err()
	}},
	{"QueryRow", func(ctx context.Context, p *pgxbudget.Pool, sql string) error {
		var v any
		return p.QueryRow(ctx, sql).Scan(&v)
	}},
	{"Exec", func(ctx context.Context, p *pgxbudget.Pool, sql string) error {
		_, err := p.Exec(ctx, sql)
		return err
	}},
	{"SendBatch", func(ctx context.Context, p *pgxbudget.Pool, sql string) error {
		b := &pgx.Batch{}
		b.Queue(sql)
		br := p.SendBatch(ctx, b)
		_, err := br.Exec()
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return err
	}},
	{"Tx", func(ctx context.Context, p *pgxbudget.Pool, sql string) error {
		tx, err := p.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, sql); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}},
}

// TestLongBudgetClamped is the regression test for budgets over 2³¹−1 ms
// (24.8 days), which PostgreSQL refuses as a statement_timeout (SQLSTATE
// 22023): every statement and BeginTx failed. The pushed timeout is clamped
// to what the server accepts.
func TestLongBudgetClamped(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 1)
	for _, long := range []time.Duration{25 * 24 * time.Hour, 2200000000 * time.Millisecond, 100 * 365 * 24 * time.Hour} {
		for _, m := range methods {
			t.Run(m.name+"/"+long.String(), func(t *testing.T) {
				ctx, cancel := budget.Start(context.Background(), long)
				defer cancel()
				if err := m.run(ctx, p, "SELECT 1"); err != nil {
					t.Fatalf("SELECT 1 with a budget of %v: %v", long, err)
				}
			})
		}
	}
}

// TestPushedLimitOnlyLowers is the regression test for limits that only
// ever lower: a session's statement_timeout of 1 s (set at connection time,
// as a role's or database's would be, or by SET after connecting) stops a
// statement at 1 s on a plain pool, and must through this package too,
// under a 30 s budget. The statement is longSleep, so that the limit not
// applied is unmistakable: the budget's timeout would stop it at about
// 30 s. The bound, half of that, leaves room for a loaded machine, where
// the first statement also waits for a new connection (seen to take over
// 5 s); the statement cannot end before the session's second.
func TestPushedLimitOnlyLowers(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"startup parameter", "SET after connecting"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			cfg := poolConfig(t, 1, appName(t))
			if how == "startup parameter" {
				cfg.ConnConfig.RuntimeParams["statement_timeout"] = "1000"
			} else {
				cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
					_, err := c.Exec(ctx, "SET statement_timeout = '1s'")
					return err
				}
			}
			p := newPoolFrom(t, cfg)
			for _, m := range methods {
				t.Run(m.name, func(t *testing.T) {
					const budgetLen = 30 * time.Second
					ctx, cancel := budget.Start(context.Background(), budgetLen)
					defer cancel()
					start := time.Now()
					err := m.run(ctx, p, longSleep)
					took := time.Since(start)
					var pe *pgconn.PgError
					if !errors.As(err, &pe) || pe.Code != "57014" {
						t.Fatalf("err = %v after %v, want the session's statement_timeout (57014)", err, took)
					}
					if took < time.Second || took > budgetLen/2 {
						t.Errorf("stopped after %v, want the session's 1 s (the budget's timeout would be %v)", took, budgetLen)
					}
				})
			}
			// A longer setting than the budget still gives way to the budget.
			ctx, cancel := budget.Start(context.Background(), 300*time.Millisecond)
			defer cancel()
			if _, err := p.Exec(ctx, "SELECT pg_sleep(2.5)"); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("300 ms budget under a 1 s setting: err = %v, want an expiry", err)
			}
		})
	}
}

// TestLockTimeoutOnlyLowers: a session's lock_timeout of 200 ms ends a lock
// wait at 200 ms under a 30 s budget, as on a plain pool. The budget's own
// lock timeout would end it at 27 s; the bound, a third of that, leaves room
// for the pool's second connection being opened on a loaded machine (seen
// to take over 5 s), and the wait cannot end before the session's 200 ms.
func TestLockTimeoutOnlyLowers(t *testing.T) {
	t.Parallel()
	cfg := poolConfig(t, 2, appName(t))
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "200"
	p := newPoolFrom(t, cfg)
	unlock := lockKey(t, p, 424201)
	defer unlock()
	ctx, cancel := budget.Start(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := p.Exec(ctx, "SELECT pg_advisory_lock(424201)")
	took := time.Since(start)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "55P03" {
		t.Fatalf("err = %v after %v, want the session's lock_timeout (55P03)", err, took)
	}
	if took < 200*time.Millisecond || took > 9*time.Second {
		t.Errorf("lock wait ended after %v, want the session's 200 ms (the budget's lock timeout would be 27 s)", took)
	}
}

// lockKey takes advisory lock key on a connection of its own and returns
// the function that gives it back. Each test uses a key of its own, since
// they run in parallel.
func lockKey(t *testing.T, p *pgxbudget.Pool, key int64) func() {
	t.Helper()
	ctx := context.Background()
	c, err := p.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		c.Release()
		t.Fatal(err)
	}
	return func() {
		_, _ = c.Exec(ctx, "SELECT pg_advisory_unlock($1)", key)
		c.Release()
	}
}

// TestNoDeadlineAfterDeadlineInTx is the regression test for settings that
// carried over inside a transaction: in a transaction begun without a
// budget, a statement with a 100 ms budget made a later statement without
// a deadline die at 89 ms, and 300 ms of idling ended the session (FATAL
// 25P03). A statement without a deadline runs under the operator's
// settings, as on a plain pool.
func TestNoDeadlineAfterDeadlineInTx(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 1)
	bg := context.Background()
	for _, begin := range []string{"without a budget", "with a budget"} {
		t.Run(begin, func(t *testing.T) {
			bctx := bg
			if begin == "with a budget" {
				var cancel context.CancelFunc
				bctx, cancel = budget.Start(bg, 30*time.Second)
				defer cancel()
			}
			tx, err := p.Begin(bctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(bg) }()
			ctx, cancel := budget.Start(bg, 100*time.Millisecond)
			_, err = tx.Exec(ctx, "SELECT 1")
			cancel()
			if err != nil {
				t.Fatalf("statement with a budget: %v", err)
			}
			for _, name := range []string{"statement_timeout", "lock_timeout"} {
				var v string
				if err := tx.QueryRow(bg, "SHOW "+name).Scan(&v); err != nil {
					t.Fatal(err)
				}
				if v != "0" {
					t.Errorf("%s = %q for a statement without a deadline, want the session's 0", name, v)
				}
			}
			if _, err := tx.Exec(bg, "SELECT pg_sleep(0.3)"); err != nil {
				t.Fatalf("statement without a deadline after one with a 100 ms budget: %v", err)
			}
			if begin == "without a budget" {
				time.Sleep(300 * time.Millisecond)
			}
			var one int
			if err := tx.QueryRow(bg, "SELECT 1").Scan(&one); err != nil {
				t.Fatalf("after idling in the transaction: %v", err)
			}
			if err := tx.Commit(bg); err != nil {
				t.Fatalf("Commit: %v", err)
			}
		})
	}
	if got := p.Pool().Stat().NewConnsCount(); got != 1 {
		t.Errorf("NewConnsCount = %d, want 1: the session must survive", got)
	}
}

// TestLockWaitReportedAsLockTimeout is the regression test for a
// lock_timeout equal to statement_timeout, which could never fire first
// (the statement's timer starts before any lock wait): a statement blocked
// on a lock for its whole budget is reported as a lock timeout (55P03, an
// expiry), not as slow work (57014).
func TestLockWaitReportedAsLockTimeout(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 2)
	unlock := lockKey(t, p, 424202)
	defer unlock()
	for _, m := range methods {
		t.Run(m.name, func(t *testing.T) {
			ctx, cancel := budget.Start(context.Background(), 500*time.Millisecond)
			defer cancel()
			err := m.run(ctx, p, "SELECT pg_advisory_lock(424202)")
			requireExpiry(t, err, "postgres")
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "55P03" {
				t.Fatalf("err = %v, want the server's lock_timeout (55P03)", err)
			}
		})
	}
}
