package pgxbudget

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Tx is a transaction begun by [Pool.Begin] or [Pool.BeginTx]. Every
// statement whose context has a deadline runs with statement_timeout and
// lock_timeout lowered to the time its context has left, in the statement's
// own round trip, and put back after it, so a statement without a deadline
// runs under the operator's settings; in a transaction begun with a budget
// it also lowers idle_in_transaction_session_timeout, which stays. A
// statement with too little time left is refused before it is sent. End it with Commit or Rollback, which return the
// connection to the pool; calling Rollback after Commit is safe and does
// nothing, so `defer tx.Rollback(ctx)` is the usual pattern.
//
// A Tx, like a pgx.Tx, must not be used by several goroutines at once.
type Tx struct {
	tx      pgx.Tx
	conn    *pgxpool.Conn
	cfg     *config
	bounded bool // begun with a budget: statements lower idle_in_transaction_session_timeout too
}

// Tx returns the underlying pgx.Tx, for what the wrapper does not cover
// (LargeObjects, Prepare). Statements run through it run under
// the operator's statement_timeout and lock_timeout, not the time left.
func (t *Tx) Tx() pgx.Tx { return t.tx }

func (t *Tx) budgetFor(ctx context.Context) (int64, error) {
	if t.conn == nil {
		return 0, pgx.ErrTxClosed
	}
	ms, _, err := t.cfg.budgetFor(ctx)
	return ms, err
}

func (t *Tx) stmt(ms int64) *stmt {
	k := inTx
	if t.bounded {
		k = inTxIdle
	}
	return &stmt{s: t.tx, c: t.conn.Conn(), pc: t.conn.Conn().PgConn(), cfg: t.cfg, kind: k, ms: ms}
}

// Query runs sql in the transaction, as pgx.Tx.Query does.
func (t *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	ms, err := t.budgetFor(ctx)
	if err != nil {
		return nil, err
	}
	if ms == 0 {
		r, err := t.tx.Query(ctx, sql, args...)
		if err != nil {
			return nil, expired(ctx, t.cfg.stage, err)
		}
		return &rows{Rows: r, st: &stmt{cfg: t.cfg}, ctx: ctx}, nil
	}
	return t.stmt(ms).query(ctx, sql, args)
}

// QueryRow runs sql in the transaction, as pgx.Tx.QueryRow does.
func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	r, err := t.Query(ctx, sql, args...)
	return row{rows: r, err: err}
}

// Exec runs sql in the transaction, as pgx.Tx.Exec does; sql must hold one
// statement.
func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ms, err := t.budgetFor(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	if ms == 0 {
		tag, err := t.tx.Exec(ctx, sql, args...)
		return tag, expired(ctx, t.cfg.stage, err)
	}
	return t.stmt(ms).exec(ctx, sql, args)
}

// SendBatch sends b in the transaction in one round trip behind the
// timeout settings, as pgx.Tx.SendBatch does.
func (t *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	ms, err := t.budgetFor(ctx)
	if err != nil {
		return &batch{err: err}
	}
	return t.stmt(ms).sendBatch(ctx, b)
}

// CopyFrom copies rows into a table with the COPY protocol in the
// transaction, as pgx.Tx.CopyFrom does. With a deadline in ctx, the copy
// runs with statement_timeout and lock_timeout lowered to the time left, as
// every statement of a Tx does, so the server stops it when the budget runs
// out even if this process has died; COPY cannot share a round trip with the
// settings, so they cost a round trip before it and one after it to put
// them back. A copy with too little time left is refused before it is sent.
func (t *Tx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	ms, err := t.budgetFor(ctx)
	if err != nil {
		return 0, err
	}
	if ms > 0 {
		k := t.stmt(ms).kind
		if _, err := t.tx.Exec(ctx, k.sql(), strconv.FormatInt(ms, 10), strconv.FormatInt(lockMillis(ms), 10)); err != nil {
			return 0, expired(ctx, t.cfg.stage, err)
		}
	}
	n, err := t.tx.CopyFrom(ctx, table, columns, src)
	if err != nil {
		return n, expired(ctx, t.cfg.stage, err)
	}
	if ms > 0 {
		if _, err := t.tx.Exec(ctx, restoreSQL); err != nil {
			return n, expired(ctx, t.cfg.stage, err)
		}
	}
	return n, nil
}

// Commit commits the transaction and returns the connection to the pool.
// An expired ctx makes pgx close the connection, as a commit whose outcome
// is unknown must.
func (t *Tx) Commit(ctx context.Context) error {
	if t.conn == nil {
		return pgx.ErrTxClosed
	}
	err := t.tx.Commit(ctx)
	t.conn.Release()
	t.conn = nil
	return expired(ctx, t.cfg.stage, err)
}

// Rollback rolls the transaction back and returns the connection to the
// pool. It runs even when ctx has ended (a rollback is what an expired
// transaction needs), bounded by the cancel grace (100 ms by default), so
// the connection stays usable. After Commit or Rollback it does nothing and
// returns nil.
func (t *Tx) Rollback(ctx context.Context) error {
	if t.conn == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.cfg.grace)
	defer cancel()
	err := t.tx.Rollback(rctx)
	t.conn.Release()
	t.conn = nil
	if errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return err
}
