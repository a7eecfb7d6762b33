package pgxbudget

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The direct path sends a statement and its settings through pgconn's
// pipeline itself, with statements prepared on the connection and described
// once, instead of through a pgx.Batch: the same messages (one Bind and one
// Execute for each of the two statements, one Sync), without the batch's
// bookkeeping. It is taken for Query, QueryRow and Exec on a pool whose
// connections use pgx's default QueryExecModeCacheStatement with a statement
// cache and no tracer; everything else goes through a pgx.Batch, which
// honours the connection's query exec mode and calls its tracer.

// stateKey is where a connection's [connState] is kept in its
// pgconn.PgConn.CustomData.
const stateKey = "github.com/timebudget/budget/pgxbudget.state"

// connState is what the direct path keeps on one connection: the
// statements it prepared there, by SQL, in a cache bounded like pgx's own
// (the connection's StatementCacheCapacity, least recently used out first),
// and buffers reused from one statement to the next. A connection is used by
// one goroutine at a time, so it needs no lock.
type connState struct {
	stmts map[string]*prepared
	lru   prepared // sentinel of the recency list: lru.next is the most recent
	cap   int
	seq   uint64   // numbers the names of prepared statements, never reused
	stale []string // names prepared on the server to deallocate in the next pipeline

	set     [3]*pgconn.StatementDescription // the settings statements by settingsKind, once prepared
	restore *pgconn.StatementDescription    // restoreSQL, once prepared

	eqb   pgx.ExtendedQueryBuilder
	param [2][]byte // the settings' parameters: statement and lock timeouts
}

// prepared is one cached statement. A nil sd marks SQL that the server
// would not prepare as written (a syntax error, or the name of a statement
// prepared with pgx.Conn.Prepare): such SQL goes through pgx.Batch.
type prepared struct {
	sql        string
	sd         *pgconn.StatementDescription
	prev, next *prepared
}

// stateOf returns pc's connState, creating it on first use.
func stateOf(pc *pgconn.PgConn, capacity int) *connState {
	m := pc.CustomData()
	if cs, ok := m[stateKey].(*connState); ok {
		return cs
	}
	cs := &connState{stmts: make(map[string]*prepared), cap: capacity}
	cs.lru.next, cs.lru.prev = &cs.lru, &cs.lru
	m[stateKey] = cs
	return cs
}

func (cs *connState) name() string {
	cs.seq++
	return "pgxbudget_" + strconv.FormatUint(cs.seq, 10)
}

// get returns sql's cache entry, marked as the most recently used, or nil.
func (cs *connState) get(sql string) *prepared {
	e := cs.stmts[sql]
	if e != nil && cs.lru.next != e {
		e.unlink()
		cs.push(e)
	}
	return e
}

func (cs *connState) push(e *prepared) {
	e.prev, e.next = &cs.lru, cs.lru.next
	e.next.prev = e
	cs.lru.next = e
}

func (e *prepared) unlink() {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// put caches sd for sql, evicting the least recently used statement when
// the cache is full (it is deallocated in the next pipeline).
func (cs *connState) put(sql string, sd *pgconn.StatementDescription) *prepared {
	if len(cs.stmts) >= cs.cap {
		cs.drop(cs.lru.prev)
	}
	e := &prepared{sql: sql, sd: sd}
	cs.stmts[sql] = e
	cs.push(e)
	return e
}

// drop removes e from the cache and deallocates its statement in the next
// pipeline.
func (cs *connState) drop(e *prepared) {
	if e == nil || e == &cs.lru || cs.stmts[e.sql] != e {
		return
	}
	delete(cs.stmts, e.sql)
	e.unlink()
	if e.sd != nil {
		cs.stale = append(cs.stale, e.sd.Name)
	}
}

// reset forgets every statement, after the server said one of them does not
// exist (DEALLOCATE ALL or DISCARD ALL on the connection): those that still
// exist are deallocated in the next pipeline, and new names are used.
func (cs *connState) reset() {
	for _, e := range cs.stmts {
		cs.drop(e)
	}
	for i, sd := range cs.set {
		if sd != nil {
			cs.stale = append(cs.stale, sd.Name)
		}
		cs.set[i] = nil
	}
	if cs.restore != nil {
		cs.stale = append(cs.stale, cs.restore.Name)
		cs.restore = nil
	}
}

// errFallback says a statement must go through pgx.Batch instead.
var errFallback = errors.New("pgxbudget: statement not prepared")

// direct reports whether a statement with args may take the direct path
// on a pool configured for it. Its pgx options were read already (see
// options); any left, after a QueryRewriter, are left to pgx.
//
// SQL of a single word is left to pgx too: it may be the name of a statement
// prepared with pgx.Conn.Prepare, which only pgx can resolve.
func (st *stmt) direct(sql string, args []any) bool {
	if !st.cfg.direct || st.c == nil || !strings.ContainsAny(sql, " \t\r\n") {
		return false
	}
	if len(args) > 0 {
		switch args[0].(type) {
		case pgx.QueryExecMode, pgx.QueryResultFormats, pgx.QueryResultFormatsByOID, pgx.QueryRewriter:
			return false
		}
	}
	return true
}

// callOpts are the pgx option arguments a call began with, as pgx reads
// them: a QueryExecMode, result formats (not for Exec, whose arguments
// they would be, as in pgx) and a QueryRewriter, applied once the options
// are read.
type callOpts struct {
	mode    pgx.QueryExecMode // 0 when none was given
	formats pgx.QueryResultFormats
	byOID   pgx.QueryResultFormatsByOID
}

// given reports whether the call chose a mode or result formats: such a
// call takes the direct path whatever the pool's configuration, since a
// pgx.Batch carries neither.
func (o callOpts) given() bool { return o.mode != 0 || o.formats != nil || o.byOID != nil }

// unnamed reports whether the statement is sent without being prepared:
// pgx's QueryExecModeExec, and QueryExecModeSimpleProtocol, which pgx
// documents as having the same visible behaviour (the settings cannot share
// a simple query's implicit transaction unless the arguments are
// interpolated into the SQL, which pgx does not export).
func (o callOpts) unnamed() bool {
	return o.mode == pgx.QueryExecModeExec || o.mode == pgx.QueryExecModeSimpleProtocol
}

// resultFormats returns the result formats to ask for, as pgx chooses
// them: by OID when given, else by position when given, else def.
func (o callOpts) resultFormats(fields []pgconn.FieldDescription, def []int16) []int16 {
	if o.byOID != nil && fields != nil {
		f := make([]int16, len(fields))
		for i := range f {
			f[i] = o.byOID[fields[i].DataTypeOID]
		}
		return f
	}
	if o.formats != nil {
		return o.formats
	}
	return def
}

// options reads the pgx option arguments args begins with and applies a
// QueryRewriter, returning the SQL and arguments to send. query says
// whether result formats are options (Query) or arguments (Exec).
func (st *stmt) options(ctx context.Context, sql string, args []any, query bool) (string, []any, callOpts, error) {
	var o callOpts
	var rw pgx.QueryRewriter
loop:
	for len(args) > 0 {
		switch a := args[0].(type) {
		case pgx.QueryResultFormats:
			if !query {
				break loop
			}
			o.formats = a
		case pgx.QueryResultFormatsByOID:
			if !query {
				break loop
			}
			o.byOID = a
		case pgx.QueryExecMode:
			o.mode = a
		case pgx.QueryRewriter:
			rw = a
		default:
			break loop
		}
		args = args[1:]
	}
	if rw != nil {
		var err error
		if sql, args, err = rw.RewriteQuery(ctx, st.c, sql, args); err != nil {
			return sql, args, o, fmt.Errorf("rewrite query failed: %w", err)
		}
	}
	return sql, args, o, nil
}

// round is one pipeline on its way: what was queued, to read the results
// back in order.
type round struct {
	pl          *pgconn.Pipeline
	stale       int    // deallocations queued first
	prepSet     string // the settings statement's name when it is prepared in this round
	prepRestore string // restoreSQL's name when it is prepared in this round
	kind        settingsKind
}

// begin starts a pipeline on st's connection with the pending deallocations
// and the settings queued.
func (st *stmt) begin(ctx context.Context, cs *connState) round {
	r := round{pl: st.pc.StartPipeline(ctx), stale: len(cs.stale), kind: st.kind}
	for _, name := range cs.stale {
		r.pl.SendDeallocate(name)
	}
	cs.param[0] = strconv.AppendInt(cs.param[0][:0], st.ms, 10)
	cs.param[1] = strconv.AppendInt(cs.param[1][:0], lockMillis(st.ms), 10)
	if sd := cs.set[st.kind]; sd != nil {
		r.pl.SendQueryStatement(sd, cs.param[:], nil, nil)
	} else {
		// First use on this connection: prepare the settings statement in
		// the same round trip and run it at once; its parameters are text
		// and its results are read in text, so nothing of its description
		// is needed yet.
		r.prepSet = cs.name()
		r.pl.SendPrepare(r.prepSet, st.kind.sql(), nil)
		r.pl.SendQueryPrepared(r.prepSet, cs.param[:], nil, nil)
	}
	if st.kind.restores() && cs.restore == nil {
		// Likewise the statement putting the settings back, run after the
		// statement (see restore).
		r.prepRestore = cs.name()
		r.pl.SendPrepare(r.prepRestore, restoreSQL, nil)
	}
	return r
}

// settled reads the results of what begin queued: the deallocations, the
// settings and the restore's preparation.
func (r *round) settled(cs *connState) error {
	for range r.stale {
		if _, err := r.pl.GetResults(); err != nil {
			return err
		}
	}
	cs.stale = cs.stale[:0]
	if r.prepSet != "" {
		res, err := r.pl.GetResults()
		if err != nil {
			return err
		}
		sd, ok := res.(*pgconn.StatementDescription)
		if !ok {
			return fmt.Errorf("pgxbudget: preparing the settings: got %T", res)
		}
		sd.Name, sd.SQL = r.prepSet, r.kind.sql()
		cs.set[r.kind] = sd
	}
	res, err := r.pl.GetResults()
	if err != nil {
		return err
	}
	rr, ok := res.(*pgconn.ResultReader)
	if !ok {
		return fmt.Errorf("pgxbudget: the settings: got %T", res)
	}
	if _, err = rr.Close(); err != nil || r.prepRestore == "" {
		return err
	}
	res, err = r.pl.GetResults()
	if err != nil {
		return err
	}
	sd, ok := res.(*pgconn.StatementDescription)
	if !ok {
		return fmt.Errorf("pgxbudget: preparing the restore: got %T", res)
	}
	sd.Name, sd.SQL = r.prepRestore, restoreSQL
	cs.restore = sd
	return nil
}

// abort ends a round that failed, reading what is left of it; err is the
// failure, which a server saying a prepared statement is missing turns into
// forgetting them all.
func (r *round) abort(cs *connState, err error) {
	_ = r.pl.Close()
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "26000" {
		cs.reset()
	}
}

// prepare prepares sql behind the settings, so that even describing it is
// bounded by the server's timeout, in a round trip of its own (the
// arguments cannot be encoded before the parameter types are known).
func (st *stmt) prepare(ctx context.Context, cs *connState, sql string) (*prepared, error) {
	r := st.begin(ctx, cs)
	name := cs.name()
	r.pl.SendPrepare(name, sql, nil)
	st.restore(r, cs)
	err := r.pl.Sync()
	if err == nil {
		err = r.settled(cs)
	}
	var sd *pgconn.StatementDescription
	if err == nil {
		res, gerr := r.pl.GetResults()
		sd, _ = res.(*pgconn.StatementDescription)
		if err = gerr; err == nil && sd == nil {
			err = fmt.Errorf("pgxbudget: preparing a statement: got %T", res)
		}
	}
	if err != nil {
		r.abort(cs, err)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42601" && st.kind == plain {
			// Not SQL the server can prepare: perhaps the name of a statement
			// prepared with pgx.Conn.Prepare, which pgx resolves. The Parse
			// failed, so nothing named name exists on the server. (In a
			// transaction the error has aborted it: it is returned.)
			cs.put(sql, nil)
			return nil, errFallback
		}
		return nil, err
	}
	if err := r.pl.Close(); err != nil {
		return nil, err
	}
	sd.Name, sd.SQL = name, sql
	return cs.put(sql, sd), nil
}

// send runs sql with args behind the settings in one pipeline and returns
// it with the statement's result reader; the caller reads the results and
// closes the pipeline. errFallback means the statement must go through
// pgx.Batch; nothing was sent for it then.
func (st *stmt) send(ctx context.Context, sql string, args []any, o callOpts) (*pgconn.Pipeline, *pgconn.ResultReader, error) {
	cs := stateOf(st.pc, st.cfg.capacity)
	if o.unnamed() {
		return st.sendUnnamed(ctx, cs, sql, args, o)
	}
	pl, rr, err := st.sendOnce(ctx, cs, sql, args, o)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "26000" && st.kind == plain && !st.pc.IsClosed() {
		// A statement of ours was deallocated behind our back (outside a
		// transaction, which the error would have aborted): nothing ran,
		// since a Bind failed, and the cache was reset, so prepare and send
		// again, with what is left now.
		ms, _, err := st.cfg.budgetFor(ctx)
		if err != nil {
			return nil, nil, err
		}
		st.ms = ms
		return st.sendOnce(ctx, cs, sql, args, o)
	}
	return pl, rr, err
}

func (st *stmt) sendOnce(ctx context.Context, cs *connState, sql string, args []any, o callOpts) (*pgconn.Pipeline, *pgconn.ResultReader, error) {
	e := cs.get(sql)
	if e == nil {
		var err error
		if e, err = st.prepare(ctx, cs, sql); err != nil {
			return nil, nil, err
		}
		// The prepare took a round trip: the statement gets what is left now.
		ms, _, err := st.cfg.budgetFor(ctx)
		if err != nil {
			return nil, nil, err
		}
		st.ms = ms
	}
	if e.sd == nil {
		return nil, nil, errFallback
	}
	if len(e.sd.ParamOIDs) != len(args) {
		return nil, nil, fmt.Errorf("expected %d arguments, got %d", len(e.sd.ParamOIDs), len(args))
	}
	if err := cs.eqb.Build(st.c.TypeMap(), e.sd, args); err != nil {
		return nil, nil, err
	}
	r := st.begin(ctx, cs)
	r.pl.SendQueryStatement(e.sd, cs.eqb.ParamValues, cs.eqb.ParamFormats, o.resultFormats(e.sd.Fields, cs.eqb.ResultFormats))
	return st.finish(r, cs, sql)
}

// sendUnnamed sends sql with args behind the settings as pgx's
// QueryExecModeExec does: not prepared, the arguments encoded by their Go
// types and the server inferring the parameters' types.
func (st *stmt) sendUnnamed(ctx context.Context, cs *connState, sql string, args []any, o callOpts) (*pgconn.Pipeline, *pgconn.ResultReader, error) {
	if err := cs.eqb.Build(st.c.TypeMap(), nil, args); err != nil {
		return nil, nil, err
	}
	r := st.begin(ctx, cs)
	r.pl.SendQueryParams(sql, cs.eqb.ParamValues, nil, cs.eqb.ParamFormats, o.resultFormats(nil, cs.eqb.ResultFormats))
	return st.finish(r, cs, sql)
}

// finish queues the restoring of the settings (in a transaction), syncs
// the round and returns the statement's result reader.
func (st *stmt) finish(r round, cs *connState, sql string) (*pgconn.Pipeline, *pgconn.ResultReader, error) {
	st.restore(r, cs)
	err := r.pl.Sync()
	if err == nil {
		err = r.settled(cs)
	}
	var rr *pgconn.ResultReader
	if err == nil {
		var res any
		res, err = r.pl.GetResults()
		if rr, _ = res.(*pgconn.ResultReader); err == nil && rr == nil {
			err = fmt.Errorf("pgxbudget: the statement: got %T", res)
		}
	}
	if err != nil {
		r.abort(cs, err)
		cs.invalidate(sql, err)
		return nil, nil, err
	}
	return r.pl, rr, nil
}

// restore queues, in a transaction, the statement that puts the settings
// back once the statement has run; its result is read when the pipeline is
// closed. When the statement fails the server skips it, and the failed
// transaction's end (or a rollback to a savepoint) puts them back.
func (st *stmt) restore(r round, cs *connState) {
	switch {
	case !st.kind.restores():
	case r.prepRestore != "":
		r.pl.SendQueryPrepared(r.prepRestore, nil, nil, nil)
	default:
		r.pl.SendQueryStatement(cs.restore, nil, nil, nil)
	}
}

// invalidate drops sql's prepared statement when the server says its
// description no longer holds (SQLSTATE 0A000: cached plan must not change
// result type), as pgx does for its own cache; it is prepared again on next
// use.
func (cs *connState) invalidate(sql string, err error) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "0A000" {
		cs.drop(cs.stmts[sql])
	}
}
