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
	"github.com/timebudget/budget/pgxbudget"
)

// requireExpiry fails the test unless err is this package's expiry of stage.
func requireExpiry(t *testing.T, err error, stage string) {
	t.Helper()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a match for context.DeadlineExceeded", err)
	}
	var be *budget.Error
	if !errors.As(err, &be) || be.Outcome != budget.OutcomeExpired || be.Stage != stage {
		t.Fatalf("err = %#v, want *budget.Error{Outcome: expired, Stage: %q}", err, stage)
	}
	if !pgxbudget.IsTimeout(err) {
		t.Fatalf("IsTimeout(%v) = false, want true", err)
	}
}

// TestStatementTimeoutPushedDown runs a statement longer than its budget
// through each method: the server stops it before the deadline (so the
// answer is the server's 57014, not a client-side cancel), the error is an
// expiry, and the connection is kept.
func TestStatementTimeoutPushedDown(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 1)
	run := map[string]func(ctx context.Context) error{
		"Query": func(ctx context.Context) error {
			rows, err := p.Query(ctx, "SELECT pg_sleep(5)")
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			return rows.Err()
		},
		"QueryRow": func(ctx context.Context) error {
			var s string
			return p.QueryRow(ctx, "SELECT pg_sleep(5)::text").Scan(&s)
		},
		"Exec": func(ctx context.Context) error {
			_, err := p.Exec(ctx, "SELECT pg_sleep($1)", 5)
			return err
		},
		"SendBatch": func(ctx context.Context) error {
			b := &pgx.Batch{}
			b.Queue("SELECT 1")
			b.Queue("SELECT pg_sleep(5)")
			br := p.SendBatch(ctx, b)
			if _, err := br.Exec(); err != nil {
				return err
			}
			_, err := br.Exec()
			if cerr := br.Close(); cerr != nil && err == nil {
				err = cerr
			}
			return err
		},
		"Tx": func(ctx context.Context) error {
			tx, err := p.Begin(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(ctx) }()
			_, err = tx.Exec(ctx, "SELECT pg_sleep(5)")
			return err
		},
	}
	for _, name := range []string{"Query", "QueryRow", "Exec", "SendBatch", "Tx"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := budget.Start(context.Background(), 250*time.Millisecond)
			defer cancel()
			dl, _ := ctx.Deadline()
			err := run[name](ctx)
			returned := time.Now()
			requireExpiry(t, err, "postgres")
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "57014" {
				t.Fatalf("err = %v, want it to wrap the server's SQLSTATE 57014", err)
			}
			if returned.After(dl.Add(50 * time.Millisecond)) {
				t.Errorf("returned %v after the deadline", returned.Sub(dl))
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n int
	if err := p.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("SELECT 1 after the timeouts: %d, %v", n, err)
	}
	if got := p.Pool().Stat().NewConnsCount(); got != 1 {
		t.Errorf("NewConnsCount = %d, want 1: timeouts must not cost connections", got)
	}
}

// TestSettingsEndWithTheStatement checks that the timeouts set for one
// statement do not outlive it on the connection.
func TestSettingsEndWithTheStatement(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 1)
	ctx, cancel := budget.Start(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := p.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	tx, err := p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var inTx string
	if err := tx.QueryRow(ctx, "SHOW idle_in_transaction_session_timeout").Scan(&inTx); err != nil {
		t.Fatal(err)
	}
	if inTx == "0" {
		t.Errorf("idle_in_transaction_session_timeout in a budgeted transaction = 0, want the budget")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"} {
		var v string
		if err := p.Pool().QueryRow(context.Background(), "SHOW "+name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != "0" {
			t.Errorf("%s = %q on the connection after the statement, want the session default 0", name, v)
		}
	}
}

// TestRefusedStatementNeverReachesServer gives a statement less than a
// millisecond: it is refused before a connection is even acquired.
func TestRefusedStatementNeverReachesServer(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 1)
	before := p.Pool().Stat().AcquireCount()
	ctx, cancel := budget.Start(context.Background(), 500*time.Microsecond)
	defer cancel()
	_, err := p.Exec(ctx, "SELECT 1")
	if !errors.Is(err, budget.ErrInsufficient) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a refusal", err)
	}
	if n := p.Pool().Stat().AcquireCount() - before; n != 0 {
		t.Errorf("AcquireCount grew by %d, want 0: a refused statement must not reach the pool", n)
	}
	ctx2, cancel2 := budget.Start(context.Background(), time.Second)
	defer cancel2()
	ctx2 = budget.WithReserve(ctx2, time.Second-500*time.Microsecond)
	_, err = p.Exec(ctx2, "SELECT 1")
	if !errors.Is(err, budget.ErrInsufficient) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrInsufficient and not DeadlineExceeded", err)
	}
	if n := p.Pool().Stat().AcquireCount() - before; n != 0 {
		t.Errorf("AcquireCount grew by %d, want 0", n)
	}
}

// TestPoolWaitIsAStage holds the only connection so that a statement waits
// for one until its budget ends: the wait is an expiry of the acquire stage,
// recorded in the ledger.
func TestPoolWaitIsAStage(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 1)
	held, err := p.Pool().Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	ctx, cancel := budget.Start(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = p.Exec(ctx, "SELECT 1")
	requireExpiry(t, err, "postgres.acquire")
	var found bool
	for _, ev := range budget.LedgerFrom(ctx).Events() {
		if ev.Kind == budget.EventQueue && ev.Stage == "postgres.acquire" && ev.Outcome == budget.OutcomeExpired {
			found = ev.Duration >= 90*time.Millisecond
		}
	}
	if !found {
		t.Errorf("ledger has no expired queue event for postgres.acquire of about 100ms:\n%v", budget.LedgerFrom(ctx))
	}
}

// TestClientCancelKeepsConnection ends statements on the client side (a
// plain context deadline, so no statement_timeout is set, and a caller's
// cancel): with Configure the connection survives every cancel, and a
// cancel request that settles late does not hit the next statement.
func TestClientCancelKeepsConnection(t *testing.T) {
	t.Parallel()
	cfg := poolConfig(t, 1, appName(t))
	pgxbudget.Configure(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	p := pgxbudget.Wrap(pool)
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, context.DeadlineExceeded},
		{"caller gave up", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"deadline again", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, context.DeadlineExceeded},
	} {
		ctx, cancel := tc.ctx()
		start := time.Now()
		_, err := p.Exec(ctx, "SELECT pg_sleep(5)")
		took := time.Since(start)
		cancel()
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		if took > time.Second {
			t.Fatalf("%s: a canceled statement took %v", tc.name, took)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		var n int
		err = p.QueryRow(ctx, "SELECT 1").Scan(&n)
		cancel()
		if err != nil {
			t.Fatalf("%s: SELECT 1 after the cancel: %v", tc.name, err)
		}
	}
	if got := pool.Stat().NewConnsCount(); got != 1 {
		t.Errorf("NewConnsCount = %d, want 1: client-side cancels must not cost connections", got)
	}
}

// TestIsTimeout classifies server errors: statement and lock timeouts are
// timeouts, NOWAIT's lock failure and other errors are not.
func TestIsTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"statement timeout", &pgconn.PgError{Code: "57014", Routine: "ProcessInterrupts"}, true},
		{"lock timeout", &pgconn.PgError{Code: "55P03", Routine: "ProcessInterrupts"}, true},
		{"nowait", &pgconn.PgError{Code: "55P03", Routine: "heap_lock_tuple"}, false},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"wrapped", errors.Join(errors.New("x"), &pgconn.PgError{Code: "57014"}), true},
		{"budget expiry", &budget.Error{Outcome: budget.OutcomeExpired}, true},
		{"budget refusal", &budget.Error{Outcome: budget.OutcomeInsufficient}, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := pgxbudget.IsTimeout(tc.err); got != tc.want {
				t.Errorf("IsTimeout(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestLockTimeoutAndNowaitOnServer checks IsTimeout against the server's
// real errors: a lock_timeout and a NOWAIT failure on the same locked row.
func TestLockTimeoutAndNowaitOnServer(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 2)
	pool := p.Pool()
	ctx := context.Background()
	table := "pgxbudget_lock_" + appName(t)[len("pgxbudget-"):]
	table = pgx.Identifier{table}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE TABLE "+table+" (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = pool.Exec(ctx, "DROP TABLE "+table) }()
	if _, err := pool.Exec(ctx, "INSERT INTO "+table+" VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback(ctx) }()
	if _, err := holder.Exec(ctx, "SELECT id FROM "+table+" WHERE id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, sql string
		want      bool
	}{
		{"lock_timeout", "SET LOCAL lock_timeout = 50; SELECT id FROM " + table + " WHERE id = 1 FOR UPDATE", true},
		{"nowait", "SELECT id FROM " + table + " WHERE id = 1 FOR UPDATE NOWAIT", false},
	} {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(ctx, tc.sql)
		_ = tx.Rollback(ctx)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "55P03" {
			t.Fatalf("%s: err = %v, want SQLSTATE 55P03", tc.name, err)
		}
		if got := pgxbudget.IsTimeout(err); got != tc.want {
			t.Errorf("%s: IsTimeout = %v (routine %q), want %v", tc.name, got, pe.Routine, tc.want)
		}
	}
}

// TestOpLearnsFromServerTimeouts runs statements through an Op: the server's
// timeouts come back as expiries the Op records as cut-off samples.
func TestOpLearnsFromServerTimeouts(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 1)
	op := &budget.Op{Name: "orders", Expired: pgxbudget.IsTimeout}
	for range 3 {
		ctx, cancel := budget.Start(context.Background(), 100*time.Millisecond)
		err := op.Do(ctx, func(ctx context.Context) error {
			_, err := p.Exec(ctx, "SELECT pg_sleep(5)")
			return err
		})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want an expiry", err)
		}
	}
	d := op.Estimator.Distribution(time.Now())
	if d.Censored() != 3 {
		t.Errorf("censored samples = %d, want 3", d.Censored())
	}
}

// TestBatchBeginTxKeepsItsTransaction sends a batch begun with
// Batch.BeginTx: its transaction must survive the wrapper.
func TestBatchBeginTxKeepsItsTransaction(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 1)
	ctx, cancel := budget.Start(context.Background(), 5*time.Second)
	defer cancel()
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue("SELECT 1")
	br := p.SendBatch(ctx, b)
	tx := br.Tx()
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	if tx == nil {
		t.Fatal("Tx() = nil for a batch begun with BeginTx")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}
