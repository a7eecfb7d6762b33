package pgxbudget

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

// customKey is where a connection's canceler is kept in its
// pgconn.PgConn.CustomData, so the pool's AfterRelease hook can find it.
const customKey = "github.com/timebudget/budget/pgxbudget.canceler"

// Configure sets up cfg so that a statement whose context ends keeps its
// connection (see the package documentation): it replaces
// cfg.ConnConfig.BuildContextWatcherHandler and wraps cfg.AfterRelease and
// cfg.PrepareConn (calling the ones already set, if any, afterwards; a
// BeforeAcquire without a PrepareConn is called the same way). [New] calls
// it; call it yourself before pgxpool.NewWithConfig when you build the pool
// and [Wrap] it, with the same options. [WithCancelGrace] and [WithReserve]
// apply here: when a statement's context ends, the cancel request is sent
// after the reserve (10 ms by default), because a statement with a budget
// was given a server-side timeout that ended it a reserve before its
// deadline, so the server's answer is normally already on its way, and a
// cancel request costs the server a new process. A nil cfg is ignored.
//
// A connection whose statement was canceled goes back to the pool once the
// cancel request has settled, up to the grace plus 100 ms after the
// statement returned; meanwhile it is neither idle nor usable, so the pool
// may open another connection if it is below MaxConns. pgxpool puts some
// connections back without AfterRelease: one whose health-check ping (run
// on a connection idle for over a second, under the acquiring caller's
// deadline) outlived that deadline. The cancel of such a ping is settled
// when the connection is next acquired (PrepareConn), which waits for it
// while the acquiring context lets it; a connection whose cancel request was
// not acknowledged is closed then.
func Configure(cfg *pgxpool.Config, opts ...Option) {
	if cfg == nil || cfg.ConnConfig == nil {
		return
	}
	c := newConfig(opts)
	cfg.ConnConfig.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		h := &canceler{conn: pc, delay: c.reserve, grace: c.grace, settle: c.settle}
		if m := pc.CustomData(); m != nil {
			m[customKey] = h
		}
		return h
	}
	next := cfg.AfterRelease
	cfg.AfterRelease = func(conn *pgx.Conn) bool {
		if h := cancelerOf(conn.PgConn()); h != nil && !h.settled() {
			return false
		}
		if next != nil {
			return next(conn)
		}
		return true
	}
	// Setting PrepareConn makes pgxpool ignore a BeforeAcquire, so a
	// BeforeAcquire the caller set (deprecated, but still honoured by
	// pgxpool) is called from ours.
	prepare := cfg.PrepareConn
	//lint:ignore SA1019 honouring the caller's hook, as pgxpool would
	before := cfg.BeforeAcquire
	if prepare == nil && before != nil {
		prepare = func(ctx context.Context, conn *pgx.Conn) (bool, error) { return before(ctx, conn), nil }
	}
	cfg.PrepareConn = func(ctx context.Context, conn *pgx.Conn) (bool, error) {
		if h := cancelerOf(conn.PgConn()); h != nil {
			if usable, err := h.settledWithin(ctx); err != nil || !usable {
				// Not settled in time: back to the pool (true), still
				// pending, and the caller gets its context's error.
				// Not usable: closed (false), and pgxpool tries another.
				return err != nil, err
			}
		}
		if prepare != nil {
			return prepare(ctx, conn)
		}
		return true, nil
	}
}

// cancelerOf returns the canceler Configure installed on pc, or nil.
func cancelerOf(pc *pgconn.PgConn) *canceler {
	h, _ := pc.CustomData()[customKey].(*canceler)
	return h
}

// arm tells pc's canceler, if any, whether the server has its own timeout
// for the statement about to run, ending before the statement's deadline.
func arm(pc *pgconn.PgConn, on bool) {
	if h := cancelerOf(pc); h != nil {
		h.armed.Store(on)
	}
}

// cancelWait bounds how long a cancel request may take to be acknowledged
// by the server. It runs off the caller's path; a connection whose cancel
// request was not acknowledged by then is closed, since the cancel could
// still land on its next statement.
const cancelWait = time.Second

// canceler is the ctxwatch.Handler of one connection. When a statement's
// context ends it bounds the wait for the server's answer by a deadline on
// the socket (the grace) and, unless the server enforces the statement's
// budget itself or answers within a short delay (the reserve), sends a
// cancel request. Unlike pgx's
// CancelRequestContextWatcherHandler it does not make the statement's caller
// wait for the cancel request to settle: the pool's AfterRelease waits
// instead, off the caller's path, so a cancel that arrives late cannot hit the
// connection's next statement; a connection pgxpool puts back without
// AfterRelease (after a health-check ping) is settled by PrepareConn.
//
// Each cancel has a state of its own. The state of the statement being
// watched (watch) is what HandleUnwatchAfterCancel closes, once, and forgets;
// the cancels not yet settled are a chain (last, each waiting for the one
// before), taken whole by whoever settles the connection. So a cancel left
// behind by a release without AfterRelease is neither closed twice nor lost.
type canceler struct {
	conn   *pgconn.PgConn
	delay  time.Duration
	grace  time.Duration
	settle time.Duration

	// armed is set while a statement runs whose budget the server enforces
	// (statement_timeout ends it a reserve before its deadline): the server
	// will answer on its own, so no cancel request is sent, which would only
	// cost the server a process per expiry when a burst of them is late.
	armed atomic.Bool

	mu    sync.Mutex
	watch *cancelState // of the statement watched now, until it returns
	last  *cancelState // the latest cancel, until the connection is settled
}

// cancelState follows one cancel.
type cancelState struct {
	unwatched chan struct{} // closed when the statement has returned
	done      chan struct{} // closed when the cancel request, and prev's, have settled
	prev      *cancelState  // an earlier cancel not settled yet, or nil
	usable    bool          // written before done is closed: the connection may be reused
}

// HandleCancel is called by pgx, on a goroutine of its own, when the watched
// context ends while a statement runs.
func (h *canceler) HandleCancel(context.Context) {
	if h.armed.Load() {
		// The server's own timeout has stopped the statement or is about to,
		// and its answer is on its way: giving up on the connection before it
		// arrives would only cost the connection. Wait longer for it (the
		// grace plus a second); only a lost network hits this bound.
		_ = h.conn.Conn().SetDeadline(time.Now().Add(h.grace + cancelWait))
		return
	}
	_ = h.conn.Conn().SetDeadline(time.Now().Add(h.grace))
	st := &cancelState{unwatched: make(chan struct{}), done: make(chan struct{})}
	h.mu.Lock()
	st.prev, h.last, h.watch = h.last, st, st
	h.mu.Unlock()
	go h.cancel(st)
}

// cancel sends the cancel request unless the statement returns first.
func (h *canceler) cancel(st *cancelState) {
	defer close(st.done)
	st.usable = h.request(st)
	if st.prev != nil {
		<-st.prev.done
		st.usable = st.usable && st.prev.usable
		st.prev = nil
	}
}

// request sends st's cancel request unless the statement returns first,
// and reports whether the connection may be reused.
func (h *canceler) request(st *cancelState) bool {
	// A statement with a budget was given a statement_timeout a reserve
	// before its deadline, so the server's answer is normally on its way
	// already: wait as long again before sending a cancel request, which
	// costs the server a new process, so that a burst of expiries does not
	// become a burst of cancel requests.
	t := time.NewTimer(h.delay)
	select {
	case <-st.unwatched:
		t.Stop()
		return true
	case <-t.C:
	}
	ctx, cancel := context.WithTimeout(context.Background(), cancelWait)
	err := h.conn.CancelRequest(ctx)
	usable := err == nil && ctx.Err() == nil
	cancel()
	if usable {
		// The server has acknowledged the request, but the signal may not yet
		// have reached the backend; give it time before the connection is
		// reused.
		time.Sleep(h.settle)
	}
	return usable
}

// HandleUnwatchAfterCancel is called by pgx when the statement has returned.
func (h *canceler) HandleUnwatchAfterCancel() {
	_ = h.conn.Conn().SetDeadline(time.Time{})
	h.mu.Lock()
	if h.watch != nil {
		close(h.watch.unwatched)
		h.watch = nil
	}
	h.mu.Unlock()
}

// settled waits until every cancel request of the connection has settled,
// and reports whether the connection may be reused.
func (h *canceler) settled() bool {
	usable, _ := h.settledWithin(context.Background())
	return usable
}

// settledWithin is settled bounded by ctx: when ctx ends first, the cancels
// stay pending for the next to settle the connection and ctx's error is
// returned.
func (h *canceler) settledWithin(ctx context.Context) (bool, error) {
	h.mu.Lock()
	st := h.last
	h.last = nil
	h.mu.Unlock()
	if st == nil {
		return true, nil
	}
	select {
	case <-st.done:
		return st.usable, nil
	default:
	}
	select {
	case <-st.done:
		return st.usable, nil
	case <-ctx.Done():
		// No newer cancel can have begun: the caller holds the connection
		// and runs nothing on it.
		h.mu.Lock()
		h.last = st
		h.mu.Unlock()
		return false, ctx.Err()
	}
}
