package pgxbudget_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/timebudget/budget"
)

// Regression: Pool's doc promised that code written against a pool changes
// one constructor and nothing else, but Pool had no Ping, Acquire, CopyFrom
// or Stat. They are there now, each under the budget of its context.
func TestPoolHasPgxMethods(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 4)
	ctx, cancel := budget.Start(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	c.Release()
	if st := p.Stat(); st == nil || st.MaxConns() != 4 {
		t.Fatalf("Stat: %+v", st)
	}

	// With too little time left, nothing reaches the server.
	short, cancelShort := budget.Start(context.Background(), 500*time.Microsecond)
	defer cancelShort()
	time.Sleep(time.Millisecond)
	if err := p.Ping(short); err == nil {
		t.Fatal("Ping with an exhausted budget succeeded")
	}
	if _, err := p.Acquire(short); err == nil {
		t.Fatal("Acquire with an exhausted budget succeeded")
	}

	tx, err := p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "CREATE TEMP TABLE copied (n int8, s text) ON COMMIT DROP"); err != nil {
		t.Fatal(err)
	}
	var before string
	if err := tx.Tx().QueryRow(context.Background(), "SHOW statement_timeout").Scan(&before); err != nil {
		t.Fatal(err)
	}
	rows := [][]any{{int64(1), "a"}, {int64(2), "b"}, {int64(3), "c"}}
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"copied"}, []string{"n", "s"}, pgx.CopyFromRows(rows))
	if err != nil || n != 3 {
		t.Fatalf("Tx.CopyFrom: %d rows, %v", n, err)
	}
	var after string
	if err := tx.Tx().QueryRow(context.Background(), "SHOW statement_timeout").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("statement_timeout %q after a copy with a budget, %q before: the settings were not put back", after, before)
	}
	var count int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM copied").Scan(&count); err != nil || count != 3 {
		t.Fatalf("%d rows copied, %v", count, err)
	}
	if _, err := tx.CopyFrom(short, pgx.Identifier{"copied"}, []string{"n", "s"}, pgx.CopyFromRows(rows)); !errors.Is(err, budget.ErrInsufficient) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Tx.CopyFrom with an exhausted budget: %v, want a refusal or an expiry", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// Pool.CopyFrom outside a transaction.
	if _, err := p.Exec(ctx, "CREATE TABLE IF NOT EXISTS pgxbudget_copied (n int8, s text)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.Pool().Exec(context.Background(), "DROP TABLE IF EXISTS pgxbudget_copied") })
	if n, err := p.CopyFrom(ctx, pgx.Identifier{"pgxbudget_copied"}, []string{"n", "s"}, pgx.CopyFromRows(rows)); err != nil || n != 3 {
		t.Fatalf("Pool.CopyFrom: %d rows, %v", n, err)
	}
}
