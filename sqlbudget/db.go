package sqlbudget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/timebudget/budget"
)

// DB runs statements on a *sql.DB with the budget of their context pushed
// down to the server (see the package documentation). A DB is safe for
// concurrent use, as the *sql.DB it wraps.
type DB struct {
	db      *sql.DB
	dialect Dialect
	cfg     config
}

// New returns a DB running statements on db in dialect d. It costs one
// allocation. A nil db or an unknown dialect gives a DB whose methods return
// an error matching [budget.ErrMisconfigured] that says which.
func New(db *sql.DB, d Dialect, opts ...Option) *DB {
	c := config{stage: d.String(), reserve: 20 * time.Millisecond}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	c.acquire = c.stage + ".acquire"
	return &DB{db: db, dialect: d, cfg: c}
}

// DB returns the underlying *sql.DB.
func (db *DB) DB() *sql.DB { return db.db }

func (db *DB) check() error {
	switch {
	case db.db == nil:
		return fmt.Errorf("%w: sqlbudget.New was given a nil *sql.DB", budget.ErrMisconfigured)
	case !db.dialect.valid():
		return fmt.Errorf("%w: sqlbudget.New was given an unknown %v", budget.ErrMisconfigured, db.dialect)
	}
	return nil
}

// limitFor returns the server-side limit for a statement under ctx's
// budget ([Timeout], clamped to the dialect's maximum), whether ctx has a
// deadline at all, and the refusal to report when the limit would be under
// a millisecond.
func (db *DB) limitFor(ctx context.Context) (time.Duration, bool, error) {
	avail, ok := budget.Available(ctx)
	if !ok {
		return 0, false, nil
	}
	to := Timeout(avail, db.cfg.reserve, db.dialect.longest())
	if to < time.Millisecond {
		return 0, true, budget.Refuse(ctx, db.cfg.stage, time.Now(), avail, time.Millisecond)
	}
	return to, true, nil
}

// conn takes a connection for one statement, recording the wait in the
// ledger ([Acquire]), and returns it with the statement's limit (zero
// without a deadline).
func (db *DB) conn(ctx context.Context) (*sql.Conn, time.Duration, error) {
	if err := db.check(); err != nil {
		return nil, 0, err
	}
	if _, bounded, err := db.limitFor(ctx); err != nil {
		return nil, 0, err
	} else if !bounded {
		c, err := db.db.Conn(ctx)
		return c, 0, err
	}
	c, err := Acquire(ctx, db.cfg.acquire, db.db.Conn)
	if err != nil {
		return nil, 0, err
	}
	to, _, err := db.limitFor(ctx)
	if err != nil {
		_ = c.Close()
		return nil, 0, err
	}
	return c, to, nil
}

// expired maps err as [Expired] does, with the dialect's timeouts.
func (db *DB) expired(ctx context.Context, stage string, err error) error {
	return Expired(ctx, stage, err, db.dialect.IsTimeout)
}

func isExpiry(err error) bool {
	var be *budget.Error
	return errors.As(err, &be) && be.Outcome == budget.OutcomeExpired
}

// handle is what a statement runs on: the connection, and for PostgreSQL
// the transaction that carries the settings.
type handle struct {
	conn *sql.Conn
	tx   *sql.Tx
}

// open takes a connection and, for PostgreSQL under a deadline, begins the
// transaction with the timeouts; it returns the query to send.
func (db *DB) open(ctx context.Context, query string) (handle, string, error) {
	c, to, err := db.conn(ctx)
	if err != nil {
		return handle{}, "", err
	}
	h := handle{conn: c}
	if to == 0 {
		return h, query, nil
	}
	if db.dialect != PostgreSQL {
		q, _ := db.dialect.limit(query, to)
		return h, q, nil
	}
	began := time.Now()
	tx, err := c.BeginTx(ctx, nil)
	if err == nil {
		// The statement starts a round trip after the settings are sent;
		// charge it, as long as the BEGIN's, to the limit.
		rt := time.Since(began)
		to, _, err = db.limitFor(ctx)
		if to -= rt.Round(time.Millisecond); err == nil && to < time.Millisecond {
			err = budget.Refuse(ctx, db.cfg.stage, time.Now(), to+rt, time.Millisecond)
		}
		if err == nil {
			_, err = tx.ExecContext(ctx, PostgresSetSQL, strconv.FormatInt(to.Milliseconds(), 10),
				strconv.FormatInt(LockTimeout(to).Milliseconds(), 10))
		}
		if err != nil {
			_ = tx.Rollback()
		}
	}
	if err != nil {
		_ = c.Close()
		return handle{}, "", db.expired(ctx, db.cfg.stage, err)
	}
	h.tx = tx
	return h, query, nil
}

// close ends the statement: it commits the transaction when ok (rolls it
// back otherwise) and returns the connection to the pool.
func (h handle) close(ok bool) error {
	var err error
	if h.tx != nil {
		if ok {
			err = h.tx.Commit()
		} else {
			_ = h.tx.Rollback()
		}
	}
	if cerr := h.conn.Close(); err == nil {
		err = cerr
	}
	return err
}

func (h handle) exec(ctx context.Context, query string, args []any) (sql.Result, error) {
	if h.tx != nil {
		return h.tx.ExecContext(ctx, query, args...)
	}
	return h.conn.ExecContext(ctx, query, args...)
}

func (h handle) query(ctx context.Context, query string, args []any) (*sql.Rows, error) {
	if h.tx != nil {
		return h.tx.QueryContext(ctx, query, args...)
	}
	return h.conn.QueryContext(ctx, query, args...)
}

// ExecContext runs query with the budget of ctx pushed down, as
// sql.DB.ExecContext does. For PostgreSQL the statement's transaction is
// committed before ExecContext returns.
func (db *DB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	h, q, err := db.open(ctx, query)
	if err != nil {
		return nil, err
	}
	res, err := h.exec(ctx, q, args)
	if cerr := h.close(err == nil); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, db.expired(ctx, db.cfg.stage, err)
	}
	return res, nil
}

// QueryContext runs query with the budget of ctx pushed down, as
// sql.DB.QueryContext does. Close the rows: that ends the statement's
// transaction (PostgreSQL) and returns the connection to the pool.
func (db *DB) QueryContext(ctx context.Context, query string, args ...any) (*Rows, error) {
	h, q, err := db.open(ctx, query)
	if err != nil {
		return nil, err
	}
	r, err := h.query(ctx, q, args)
	if err != nil {
		_ = h.close(false)
		return nil, db.expired(ctx, db.cfg.stage, err)
	}
	return &Rows{Rows: r, h: h, db: db, ctx: ctx}, nil
}

// QueryRowContext runs a query expected to return at most one row, as
// sql.DB.QueryRowContext does; errors are deferred to the row's Scan.
func (db *DB) QueryRowContext(ctx context.Context, query string, args ...any) *Row {
	r, err := db.QueryContext(ctx, query, args...)
	return &Row{rows: r, err: err}
}

// Rows are the result of [DB.QueryContext]: a *sql.Rows whose Close also
// ends the statement's transaction and returns its connection, and whose
// Err maps timeouts to expiries. Like *sql.Rows, they must not be used by
// several goroutines at once.
type Rows struct {
	*sql.Rows
	h      handle
	db     *DB
	ctx    context.Context // for the error mapping
	closed bool
	err    error
}

// Close closes the rows, ends the transaction and releases the connection.
// It is safe to call more than once.
func (r *Rows) Close() error {
	if r.closed {
		return r.err
	}
	r.closed = true
	err := r.Rows.Close()
	rerr := r.Rows.Err()
	if cerr := r.h.close(err == nil && rerr == nil); err == nil {
		err = cerr
	}
	if rerr != nil {
		err = rerr
	}
	r.err = r.db.expired(r.ctx, r.db.cfg.stage, err)
	return r.err
}

// Err returns the error met while iterating, mapped as the package
// documentation says.
func (r *Rows) Err() error {
	if r.closed && r.err != nil {
		return r.err
	}
	return r.db.expired(r.ctx, r.db.cfg.stage, r.Rows.Err())
}

// Row is the result of [DB.QueryRowContext].
type Row struct {
	rows *Rows
	err  error
}

// Scan copies the first row's columns into dest, as sql.Row.Scan does, and
// returns sql.ErrNoRows when there is none.
func (r *Row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer func() { _ = r.rows.Close() }()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Close()
}

// Err returns the error, if any, that kept the query from running.
func (r *Row) Err() error { return r.err }
