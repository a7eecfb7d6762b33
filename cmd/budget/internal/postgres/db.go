package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/timebudget/budget/cmd/budget/internal/dependency"
	"github.com/timebudget/budget/cmd/budget/internal/scenario"
	"github.com/timebudget/budget/pgxbudget"
)

// The database hop: with a PostgreSQL URL, the checkout scenario's payment
// stage records the charge in PostgreSQL, and the work takes as long as the
// payment fault says, as SELECT pg_sleep($1). The budget patterns run it
// through pgxbudget, which hands the server a statement_timeout with the
// statement. Per-call timeouts run it through plain pgx under their own
// context.WithTimeout; pgx sends the server a cancel request when that
// context ends. No timeout runs it through plain pgx with no deadline and
// not tied to the request (context.WithoutCancel): the demo's cut-off ends
// the request, not the statement. A sampler watches pg_stat_activity to see
// when the server really stopped.

// Dependency is the dependency whose work runs in PostgreSQL when a URL
// is available.
const Dependency = "payment"

// Env names the environment variable the demo reads a PostgreSQL
// URL from when --postgres is not given.
const Env = "BUDGET_TEST_POSTGRES"

// dbMaxConns bounds each pool the demo opens.
const dbMaxConns = 20

// dbHang is how long a statement of a hanging dependency sleeps: longer than
// any run, which cancels what is left when it ends.
const dbHang = time.Minute

// dbSamplePeriod is how often the sampler polls pg_stat_activity.
const dbSamplePeriod = 5 * time.Millisecond

// Resolve returns the URL the demo runs the database hop against:
// flagURL unless it is empty; otherwise the URL in $BUDGET_TEST_POSTGRES if
// the server answers within a second. "off" turns the hop off. why says,
// when there is no URL, why and how to enable it.
func Resolve(ctx context.Context, flagURL, envURL string) (url, why string) {
	switch {
	case flagURL == "off":
		return "", "database hop skipped (--postgres off)"
	case flagURL != "":
		return flagURL, ""
	case envURL == "":
		return "", "database hop skipped: no PostgreSQL (set --postgres URL or " + Env + ")"
	}
	c, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := pgx.Connect(c, envURL)
	if err != nil {
		return "", "database hop skipped: " + Env + " is set but PostgreSQL did not answer within 1s (set --postgres URL)"
	}
	_ = conn.Close(context.Background())
	return envURL, ""
}

// execer is what the database hop needs of a pool: pgxbudget.Pool and
// pgxpool.Pool both have it.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Run is the database of one pattern's run: the pool the edge's hop uses,
// the sampler's own connection and what was measured.
type Run struct {
	tag    string // unique to the run, in every statement's text
	detach bool   // statements run to their end whatever the caller does
	// pool runs the statements.
	pool execer
	work sync.WaitGroup // detached statements
	// close closes pool.
	close   func()
	smu     sync.Mutex // guards sampler, which the sampling goroutine and finish share
	sampler *pgx.Conn
	// Track follows every statement from start to end as pg_stat_activity
	// shows it; once makes Finish run once; next numbers the statements;
	// stop ends the sampling goroutine, which closes done.
	Track *dbTrack
	once  sync.Once
	next  atomic.Int64
	stop  chan struct{}
	done  chan struct{}
}

// Open connects to url for one run: a pgxbudget pool when budgetAware,
// plain pgx otherwise, and a connection for the sampler, which it starts.
// With detach, statements are not tied to their caller's context.
func Open(ctx context.Context, url, tag string, budgetAware, detach bool) (*Run, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("--postgres: %w", err)
	}
	cfg.MaxConns = dbMaxConns
	// Each statement's text is unique (it carries its tag), so it is not
	// prepared and cached.
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	r := &Run{tag: tag, detach: detach, Track: NewTrack(), stop: make(chan struct{}), done: make(chan struct{})}
	if budgetAware {
		p, err := pgxbudget.New(ctx, cfg, pgxbudget.WithStage(Dependency))
		if err != nil {
			return nil, fmt.Errorf("--postgres: %w", err)
		}
		r.pool, r.close = p, p.Close
	} else {
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("--postgres: %w", err)
		}
		r.pool, r.close = p, p.Close
	}
	if r.sampler, err = pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy()); err != nil {
		r.close()
		return nil, fmt.Errorf("--postgres: %w", err)
	}
	go r.sample()
	return r, nil
}

// sampleSQL lists the tags of the run's statements the server is executing.
const sampleSQL = `SELECT query FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%' || $1 || '%'`

// sample polls pg_stat_activity until stop is closed.
func (r *Run) sample() {
	defer close(r.done)
	t := time.NewTicker(dbSamplePeriod)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		at := time.Now()
		ids, err := r.active(context.Background())
		if err == nil {
			r.Track.Seen(ids, at)
		}
	}
}

// active returns the ids of the run's statements the server is executing.
func (r *Run) active(ctx context.Context) ([]int64, error) {
	c, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	r.smu.Lock()
	defer r.smu.Unlock()
	rows, err := r.sampler.Query(c, sampleSQL, r.tag)
	if err != nil {
		return nil, err
	}
	texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, q := range texts {
		if id, ok := ParseTag(q, r.tag); ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Finish waits up to dbDrain for the run's statements still executing to end
// by themselves, so that their time after the caller left is measured in
// full, then cancels those left (a hanging fault's) and waits up to a second
// for the server to stop them; work ended this way counts up to that moment.
// Then it stops the sampler and closes every connection. Only the first call
// does anything.
func (r *Run) Finish() { r.once.Do(r.finishOnce) }

// dbDrain is how long finish lets statements run on by themselves.
const dbDrain = 2 * time.Second

// finishOnce lets running statements drain for dbDrain, cancels on the
// server any still running, waits for the work and the sampler to stop, and
// closes the connections. It runs once, from Finish.
func (r *Run) finishOnce() {
	r.waitIdle(dbDrain)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	r.smu.Lock()
	_, _ = r.sampler.Exec(ctx, `SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE '%' || $1 || '%'`, r.tag)
	r.smu.Unlock()
	cancel()
	r.waitIdle(time.Second)
	r.work.Wait()
	close(r.stop)
	<-r.done
	_ = r.sampler.Close(context.Background())
	r.close()
}

// waitIdle waits up to d until the server executes none of the run's
// statements.
func (r *Run) waitIdle(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for ctx.Err() == nil {
		if ids, err := r.active(ctx); err != nil || len(ids) == 0 {
			return
		}
		time.Sleep(dbSamplePeriod)
	}
}

// Hop runs one statement whose server-side work takes as long as the
// dependency's fault says.
type Hop struct {
	// DB runs the statement the fault asks of Dep, the dependency whose
	// work it stands for.
	DB  *Run
	Dep *dependency.Dependency
}

// Call runs SELECT pg_sleep for the dependency's next latency, tagged so
// the sampler can follow it, and records when the caller gave up.
func (h Hop) Call(ctx context.Context) error {
	lat := h.Dep.Latency(h.Dep.Base)
	switch {
	case h.Dep.Fault.Kind == scenario.FaultFail:
		return dependency.ErrDependencyFailed
	case lat < 0:
		lat = dbHang
	}
	id := h.DB.next.Add(1)
	h.DB.Track.Start(id)
	sql := fmt.Sprintf("SELECT pg_sleep($1) /* %s:%d */", h.DB.tag, id)
	var err error
	if h.DB.detach {
		err = h.detached(ctx, sql, lat)
	} else {
		_, err = h.DB.pool.Exec(ctx, sql, lat.Seconds())
	}
	h.DB.Track.End(id, time.Now(), err == nil)
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("%w (%v)", ctxErr, err)
	}
	return err
}

// detached runs the statement with no deadline and not tied to ctx, and
// waits for it or for ctx to end, whichever comes first. finish waits for
// the statement.
func (h Hop) detached(ctx context.Context, sql string, lat time.Duration) error {
	done := make(chan error, 1)
	h.DB.work.Go(func() {
		_, err := h.DB.pool.Exec(context.WithoutCancel(ctx), sql, lat.Seconds())
		done <- err
	})
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ParseTag returns the id in a statement text tagged "/* tag:id */".
func ParseTag(query, tag string) (int64, bool) {
	_, rest, ok := strings.Cut(query, "/* "+tag+":")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, " */")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(num, 10, 64)
	return id, err == nil
}

// dbTrack follows each statement of a run: when its caller stopped waiting
// and when the server was last seen executing it. It is safe for concurrent
// use.
type dbTrack struct {
	// mu guards stmts, the statements by number, and the counts of those
	// started and answered.
	mu       sync.Mutex
	stmts    map[int64]*dbStmt
	started  int
	answered int
}

// dbStmt is what the track knows of one statement.
type dbStmt struct {
	left     time.Time // when the caller gave up; zero while waiting or after an answer
	lastSeen time.Time // when the sampler last saw the server executing it
}

// NewTrack returns an empty track.
func NewTrack() *dbTrack { return &dbTrack{stmts: map[int64]*dbStmt{}} }

// Start records that statement id was sent.
func (t *dbTrack) Start(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.started++
	t.stmts[id] = &dbStmt{}
}

// End records that the caller of statement id stopped waiting at at: with
// its answer when ok, otherwise having given up.
func (t *dbTrack) End(id int64, at time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stmts[id]
	if s == nil {
		return
	}
	if ok {
		t.answered++
		return
	}
	s.left = at
}

// Seen records that the server was executing statements ids at at.
func (t *dbTrack) Seen(ids []int64, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		if s := t.stmts[id]; s != nil && at.After(s.lastSeen) {
			s.lastSeen = at
		}
	}
}

// Measure is what the database hop measured in one run.
type Measure struct {
	// Statements were sent; Answered came back with a result.
	Statements int
	Answered   int
	// AfterLeft holds, for each statement whose caller gave up, how long the
	// server went on executing it afterwards (zero if it had stopped).
	AfterLeft []time.Duration
}

// Measure returns what was tracked so far.
func (t *dbTrack) Measure() Measure {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := Measure{Statements: t.started, Answered: t.answered}
	for _, s := range t.stmts {
		if s.left.IsZero() {
			continue
		}
		m.AfterLeft = append(m.AfterLeft, max(0, s.lastSeen.Sub(s.left)))
	}
	slices.Sort(m.AfterLeft)
	return m
}

// RanOn returns how many statements the server went on executing after
// their caller had left.
func (m Measure) RanOn() int {
	n := 0
	for _, d := range m.AfterLeft {
		if d > 0 {
			n++
		}
	}
	return n
}

// Total returns the server-side time after the callers left, summed.
func (m Measure) Total() time.Duration {
	var sum time.Duration
	for _, d := range m.AfterLeft {
		sum += d
	}
	return sum
}
