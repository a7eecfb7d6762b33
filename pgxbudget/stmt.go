package pgxbudget

import (
	"context"
	"errors"
	"reflect"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// batchSender is what a statement is sent through: a connection or a
// transaction.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// stmt is one statement (or batch) on its way to the server.
type stmt struct {
	s    batchSender
	c    *pgx.Conn      // for the direct path (pipeline.go)
	pc   *pgconn.PgConn // whose canceler is armed while the statement runs
	conn *pgxpool.Conn  // released when the statement is done; nil in a Tx
	cfg  *config
	kind settingsKind // which settings, in or out of a transaction
	ms   int64        // the statement timeout; 0 when ctx has no deadline
}

// done disarms the connection's canceler and releases the connection.
func (st *stmt) done() {
	if st.ms > 0 {
		arm(st.pc, false)
	}
	release(st.conn)
}

// start sends the settings, then queued, then (for a kind that restores
// them) the restore, in one pipeline, and consumes the settings' result.
func (st *stmt) start(ctx context.Context, queued ...*pgx.QueuedQuery) (pgx.BatchResults, error) {
	b := settings(st.ms, st.kind)
	b.QueuedQueries = append(b.QueuedQueries, queued...)
	if st.kind.restores() {
		b.Queue(restoreSQL)
	}
	arm(st.pc, true)
	br := st.s.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		st.done()
		return nil, expired(ctx, st.cfg.stage, err)
	}
	return br, nil
}

func (st *stmt) query(ctx context.Context, sql string, args []any) (pgx.Rows, error) {
	sql, args, o, err := st.options(ctx, sql, args, true)
	if err != nil {
		st.done()
		return nil, err
	}
	if o.unnamed() || o.given() || st.direct(sql, args) {
		arm(st.pc, true)
		pl, rr, err := st.send(ctx, sql, args, o)
		if err == nil {
			return &rows{Rows: pgx.RowsFromResultReader(st.c.TypeMap(), rr), pl: pl, sql: sql, st: st, ctx: ctx}, nil
		}
		if err != errFallback {
			st.done()
			return nil, expired(ctx, st.cfg.stage, err)
		}
	}
	br, err := st.start(ctx, &pgx.QueuedQuery{SQL: sql, Arguments: args})
	if err != nil {
		return nil, err
	}
	r, err := br.Query()
	if err != nil {
		if r != nil {
			r.Close()
		}
		_ = br.Close()
		st.done()
		return nil, expired(ctx, st.cfg.stage, err)
	}
	return &rows{Rows: r, br: br, st: st, ctx: ctx}, nil
}

func (st *stmt) exec(ctx context.Context, sql string, args []any) (pgconn.CommandTag, error) {
	sql, args, o, err := st.options(ctx, sql, args, false)
	if err != nil {
		st.done()
		return pgconn.CommandTag{}, err
	}
	if o.unnamed() || o.given() || st.direct(sql, args) {
		arm(st.pc, true)
		pl, rr, err := st.send(ctx, sql, args, o)
		if err == nil {
			tag, err := rr.Close()
			if cerr := pl.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				stateOf(st.pc, st.cfg.capacity).invalidate(sql, err)
			}
			st.done()
			return tag, expired(ctx, st.cfg.stage, err)
		}
		if err != errFallback {
			st.done()
			return pgconn.CommandTag{}, expired(ctx, st.cfg.stage, err)
		}
	}
	br, err := st.start(ctx, &pgx.QueuedQuery{SQL: sql, Arguments: args})
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	st.done()
	return tag, expired(ctx, st.cfg.stage, err)
}

func (st *stmt) sendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if b == nil {
		st.done()
		return &batch{err: errors.New("pgxbudget: SendBatch was given a nil *pgx.Batch")}
	}
	if st.ms == 0 || beginsTx(b) {
		st.ms = 0 // nothing armed
		return &batch{br: st.s.SendBatch(ctx, b), st: st, ctx: ctx}
	}
	br, err := st.start(ctx, b.QueuedQueries...)
	if err != nil {
		return &batch{err: err}
	}
	return &batch{br: br, st: st, ctx: ctx}
}

// beginsTx reports whether b was begun with Batch.BeginTx, whose options
// pgx keeps in an unexported field: such a batch cannot be copied behind the
// settings without losing its transaction, so it is sent as it is.
func beginsTx(b *pgx.Batch) bool {
	f := reflect.ValueOf(b).Elem().FieldByName("txOptions")
	return f.IsValid() && f.Kind() == reflect.Pointer && !f.IsNil()
}

func release(c *pgxpool.Conn) {
	if c != nil {
		c.Release()
	}
}

// rows are a statement's pgx.Rows that map errors and, when the statement
// had a pool connection of its own, release it on Close.
type rows struct {
	pgx.Rows
	br     pgx.BatchResults // nil without settings or on the direct path
	pl     *pgconn.Pipeline // the direct path's pipeline, closed with the rows
	sql    string           // on the direct path, for invalidating its statement
	st     *stmt
	ctx    context.Context // for the error mapping; pgx's rows keep it too
	closed bool
	err    error
}

func (r *rows) Next() bool {
	if r.closed {
		return false
	}
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *rows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.Rows.Err()
	if r.br != nil {
		if err := r.br.Close(); r.err == nil {
			r.err = err
		}
	}
	if r.pl != nil {
		if err := r.pl.Close(); r.err == nil {
			r.err = err
		}
		if r.err != nil {
			stateOf(r.st.pc, r.st.cfg.capacity).invalidate(r.sql, r.err)
		}
	}
	r.err = expired(r.ctx, r.st.cfg.stage, r.err)
	r.st.done()
}

func (r *rows) Err() error {
	if r.closed {
		return r.err
	}
	return expired(r.ctx, r.st.cfg.stage, r.Rows.Err())
}

// Conn returns the connection the rows were read from, as pgx's rows do.
func (r *rows) Conn() *pgx.Conn {
	if c := r.Rows.Conn(); c != nil {
		return c
	}
	return r.st.c
}

// row is the pgx.Row of QueryRow, as pgx's own: the first row, or
// pgx.ErrNoRows.
type row struct {
	rows pgx.Rows
	err  error
}

func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// batch is the pgx.BatchResults of SendBatch.
type batch struct {
	br     pgx.BatchResults
	st     *stmt
	ctx    context.Context
	err    error
	closed bool
}

func (b *batch) Exec() (pgconn.CommandTag, error) {
	if b.err != nil {
		return pgconn.CommandTag{}, b.err
	}
	tag, err := b.br.Exec()
	return tag, expired(b.ctx, b.st.cfg.stage, err)
}

func (b *batch) Query() (pgx.Rows, error) {
	if b.err != nil {
		return &errRows{err: b.err}, b.err
	}
	r, err := b.br.Query()
	if err != nil {
		return r, expired(b.ctx, b.st.cfg.stage, err)
	}
	return &rows{Rows: r, st: &stmt{cfg: b.st.cfg}, ctx: b.ctx}, nil
}

func (b *batch) QueryRow() pgx.Row {
	r, err := b.Query()
	return row{rows: r, err: err}
}

func (b *batch) Close() error {
	if b.closed || b.br == nil {
		b.closed = true
		return b.err
	}
	b.closed = true
	err := expired(b.ctx, b.st.cfg.stage, b.br.Close())
	b.st.done()
	return err
}

// errRows are the rows of a batch that could not be sent.
type errRows struct {
	pgx.Rows // nil: only the methods below may be called on a failed batch's rows
	err      error
}

func (r *errRows) Close()                                       {}
func (r *errRows) Err() error                                   { return r.err }
func (r *errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (r *errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (r *errRows) Next() bool                                   { return false }
func (r *errRows) Scan(...any) error                            { return r.err }
func (r *errRows) Values() ([]any, error)                       { return nil, r.err }
func (r *errRows) RawValues() [][]byte                          { return nil }
func (r *errRows) Conn() *pgx.Conn                              { return nil }

func (b *batch) Tx() pgx.Tx {
	if b.br == nil {
		return nil
	}
	return b.br.Tx()
}
