package pgxbudget

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/sqlbudget"
)

// Pool runs statements on a pgxpool.Pool with the budget of their context
// pushed down to the server (see the package documentation). Its methods
// have pgx's signatures. Statements whose context has no deadline run
// exactly as on the underlying pool.
//
// A Pool is safe for concurrent use, as the pgxpool.Pool it wraps. Make one
// with [New] or [Wrap]: the zero Pool, a nil *Pool and a Pool wrapping nil
// have no connections, and their methods return an error matching
// [budget.ErrMisconfigured] that says which it is.
type Pool struct {
	pool    *pgxpool.Pool
	cfg     config
	wrapped bool // made by Wrap, to tell Wrap(nil) from the zero Pool
}

// New configures cfg with [Configure], creates the pool with
// pgxpool.NewWithConfig and wraps it. The pool connects lazily, as pgxpool
// does; the error reports a configuration pgxpool refused. Close the
// returned Pool when done.
func New(ctx context.Context, cfg *pgxpool.Config, opts ...Option) (*Pool, error) {
	if cfg == nil {
		return nil, fmt.Errorf("%w: pgxbudget.New was given a nil *pgxpool.Config", budget.ErrMisconfigured)
	}
	Configure(cfg, opts...)
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return Wrap(p, opts...), nil
}

// Wrap returns a Pool running statements on p. Call [Configure] on p's
// configuration before creating p, or a statement whose context ends on the
// client side costs its connection, as plain pgx does; the server-side
// timeouts work either way. A nil p gives a Pool whose methods return an
// error matching [budget.ErrMisconfigured].
//
// Wrap reads p's connection configuration once: with pgx's default
// QueryExecModeCacheStatement, a statement cache and no tracer, Query,
// QueryRow and Exec drive pgconn's pipeline directly (see the package
// documentation); otherwise they go through a pgx.Batch, except calls whose
// arguments begin with a pgx query exec mode or result formats.
func Wrap(p *pgxpool.Pool, opts ...Option) *Pool {
	c := newConfig(opts)
	if p != nil {
		cc := p.Config().ConnConfig
		c.direct = cc.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement &&
			cc.StatementCacheCapacity > 0 && cc.Tracer == nil
		c.capacity = cc.StatementCacheCapacity
	}
	return &Pool{pool: p, cfg: c, wrapped: true}
}

// Pool returns the underlying pool, for what the wrapper does not cover
// (Reset, Config, AcquireFunc, AcquireAllIdle, and statements that cannot
// run in a transaction block). It
// is nil for a Pool without one (see [Pool]).
func (p *Pool) Pool() *pgxpool.Pool {
	if p == nil {
		return nil
	}
	return p.pool
}

// Close closes the underlying pool; it waits for every connection to be
// released, including those still settling a cancel request. It does
// nothing for a Pool without one.
func (p *Pool) Close() {
	if p != nil && p.pool != nil {
		p.pool.Close()
	}
}

// check returns the error every method reports for a Pool without a
// pgxpool.Pool, saying which mistake it was.
func (p *Pool) check() error {
	switch {
	case p == nil:
		return fmt.Errorf("%w: a nil *pgxbudget.Pool (make one with pgxbudget.New or Wrap)", budget.ErrMisconfigured)
	case p.pool != nil:
		return nil
	case p.wrapped:
		return fmt.Errorf("%w: pgxbudget.Wrap was given a nil *pgxpool.Pool", budget.ErrMisconfigured)
	}
	return fmt.Errorf("%w: a zero Pool has no pgxpool.Pool (make one with pgxbudget.New or Wrap)", budget.ErrMisconfigured)
}

// acquire takes a connection for one statement under ctx's budget and
// returns it with the statement timeout in whole milliseconds (0 when ctx
// has no deadline). Waiting for the connection is recorded in the ledger;
// a statement with too little time left is refused before and after the
// wait, and never reaches the server.
func (p *Pool) acquire(ctx context.Context) (*pgxpool.Conn, int64, error) {
	if err := p.check(); err != nil {
		return nil, 0, err
	}
	if _, bounded, err := p.cfg.budgetFor(ctx); !bounded {
		c, err := p.pool.Acquire(ctx)
		return c, 0, err
	} else if err != nil {
		return nil, 0, err
	}
	c, err := sqlbudget.Acquire(ctx, p.cfg.acquire, p.pool.Acquire)
	if err != nil {
		return nil, 0, err
	}
	ms, _, err := p.cfg.budgetFor(ctx)
	if err != nil {
		c.Release()
		return nil, 0, err
	}
	return c, ms, nil
}

func (p *Pool) stmt(c *pgxpool.Conn, ms int64) *stmt {
	cc := c.Conn()
	return &stmt{s: cc, c: cc, pc: cc.PgConn(), conn: c, cfg: &p.cfg, ms: ms}
}

// Query runs sql with the budget of ctx pushed down and returns its rows,
// as pgxpool.Pool.Query does. The connection returns to the pool when the
// rows are closed (Next returning false closes them). Errors, from Query or
// from the rows' Err, are mapped as the package documentation says.
func (p *Pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c, ms, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	if ms == 0 {
		r, err := c.Query(ctx, sql, args...)
		if err != nil {
			c.Release()
			return nil, expired(ctx, p.cfg.stage, err)
		}
		return &rows{Rows: r, st: &stmt{conn: c, cfg: &p.cfg}, ctx: ctx}, nil
	}
	return p.stmt(c, ms).query(ctx, sql, args)
}

// QueryRow is Query for at most one row, as pgxpool.Pool.QueryRow: errors
// are deferred until the row's Scan, which returns pgx.ErrNoRows when there
// is no row.
func (p *Pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	r, err := p.Query(ctx, sql, args...)
	return row{rows: r, err: err}
}

// Exec runs sql with the budget of ctx pushed down and returns its command
// tag, as pgxpool.Pool.Exec does. Unlike pgx, a statement without arguments
// is not sent with the simple protocol, so sql must hold one statement.
func (p *Pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c, ms, err := p.acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	if ms == 0 {
		defer c.Release()
		tag, err := c.Exec(ctx, sql, args...)
		return tag, expired(ctx, p.cfg.stage, err)
	}
	return p.stmt(c, ms).exec(ctx, sql, args)
}

// SendBatch sends b in one round trip behind the timeout settings, as
// pgxpool.Pool.SendBatch does; every statement of the batch shares the
// budget (the timeout is per statement, each bounded by what was left when
// the batch was sent). Close the results to return the connection.
//
// A batch begun with Batch.BeginTx is handed to pgxpool as it is, bounded by
// the client-side deadline only: its transaction options cannot be carried
// over behind the settings. Use [Pool.BeginTx] for a transaction with the
// budget pushed down.
func (p *Pool) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := p.check(); err != nil {
		return &batch{err: err}
	}
	if b != nil && beginsTx(b) {
		return p.pool.SendBatch(ctx, b)
	}
	c, ms, err := p.acquire(ctx)
	if err != nil {
		return &batch{err: err}
	}
	return p.stmt(c, ms).sendBatch(ctx, b)
}

// Begin starts a transaction with the budget of ctx; see [Pool.BeginTx].
func (p *Pool) Begin(ctx context.Context) (*Tx, error) {
	return p.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx starts a transaction as pgxpool.Pool.BeginTx does. When ctx has a
// deadline the BEGIN lowers idle_in_transaction_session_timeout to it in
// the same round trip, so a client that dies mid-transaction does not keep
// its locks past the budget (the server ends such a session), and every
// statement of the transaction lowers it again from the time then left.
// statement_timeout and lock_timeout are set by each statement with a
// deadline for itself (see [Tx]).
func (p *Pool) BeginTx(ctx context.Context, opts pgx.TxOptions) (*Tx, error) {
	c, ms, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	if ms > 0 {
		opts.BeginQuery = beginSQL(opts, ms)
	}
	tx, err := c.BeginTx(ctx, opts)
	if err != nil {
		c.Release()
		return nil, expired(ctx, p.cfg.stage, err)
	}
	return &Tx{tx: tx, conn: c, cfg: &p.cfg, bounded: ms > 0}, nil
}

// Ping checks that the server answers within the budget of ctx, as
// pgxpool.Pool.Ping does: the wait for a connection counts against the
// budget and is refused when too little time is left, and the ping itself is
// bounded by ctx's deadline (a ping runs no statement to push a timeout
// into).
func (p *Pool) Ping(ctx context.Context) error {
	c, _, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return expired(ctx, p.cfg.stage, c.Ping(ctx))
}

// Acquire takes a connection from the pool under the budget of ctx, as
// pgxpool.Pool.Acquire does: the wait counts against the budget and is
// recorded in the ledger, and a call with too little time left is refused
// with an error matching [budget.ErrInsufficient]. Statements run on the
// returned connection are plain pgx, bounded by their context's deadline on
// the client side only: use the Pool's own methods, or [Pool.Begin], to have
// the budget pushed down. Release the connection when done.
func (p *Pool) Acquire(ctx context.Context) (*pgxpool.Conn, error) {
	c, _, err := p.acquire(ctx)
	return c, err
}

// CopyFrom copies rows into a table with the COPY protocol, as
// pgxpool.Pool.CopyFrom does. The wait for a connection counts against the
// budget; the copy is bounded by ctx's deadline on the client side (with
// [Configure], pgx asks the server to cancel it when ctx ends): COPY cannot
// be preceded by the timeout settings in the same round trip. For a copy
// that must stop on the server even if this process dies, run it in a
// transaction from [Pool.Begin] and use [Tx.CopyFrom].
func (p *Pool) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	c, _, err := p.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Release()
	n, err := c.CopyFrom(ctx, table, columns, src)
	return n, expired(ctx, p.cfg.stage, err)
}

// Stat returns the underlying pool's statistics, as pgxpool.Pool.Stat does,
// or nil for a Pool without one (see [Pool]).
func (p *Pool) Stat() *pgxpool.Stat {
	if p.check() != nil {
		return nil
	}
	return p.pool.Stat()
}
