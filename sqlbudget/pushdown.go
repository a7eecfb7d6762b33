package sqlbudget

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/timebudget/budget"
)

// This file holds what every adapter that pushes a budget down into a
// database computes the same way: this package and pgxbudget (a module of
// its own, which imports these functions; they are exported for it, and for
// any other driver adapter, rather than kept in an internal package, which a
// separately versioned module could not import).

// The longest limits the servers accept. A budget longer than that is
// pushed down as the longest, rather than refused by the server (PostgreSQL
// answers SQLSTATE 22023 to a statement_timeout over 2³¹−1 ms).
const (
	// MaxPostgresTimeout is the longest statement_timeout, lock_timeout and
	// idle_in_transaction_session_timeout PostgreSQL accepts: 2³¹−1 ms,
	// about 24.8 days.
	MaxPostgresTimeout = math.MaxInt32 * time.Millisecond
	// MaxMariaDBStatementTime is the longest max_statement_time MariaDB
	// accepts: 31536000 s, one year (larger values are silently cut to it).
	MaxMariaDBStatementTime = 31536000 * time.Second
	// MaxMySQLExecutionTime is the longest MAX_EXECUTION_TIME MySQL
	// accepts: 2³²−1 ms, about 49.7 days.
	MaxMySQLExecutionTime = math.MaxUint32 * time.Millisecond
)

// Timeout returns the server-side limit for a statement that may use avail
// (the budget's available time, [budget.Available]): avail less reserve,
// the reserve being at most a fifth of avail, clamped to longest (the
// server's maximum) and rounded down to whole milliseconds, because a limit
// that ends after the deadline is worse than one that ends a little before.
// A result under a millisecond means the statement should be refused: zero
// means "no limit" to the servers. It does not allocate.
func Timeout(avail, reserve, longest time.Duration) time.Duration {
	to := avail - min(max(reserve, 0), avail/5)
	return min(to, longest).Truncate(time.Millisecond)
}

// LockTimeout returns the lock_timeout to push beside a statement timeout
// of to: nine tenths of it, rounded down to whole milliseconds, so that a
// statement blocked on a lock for most of its time is stopped by the lock
// timeout and reported as such (PostgreSQL's SQLSTATE 55P03), not as slow
// work (57014). The statement's timer starts before any lock wait, so a lock
// timeout equal to it could never fire first. It is at least a millisecond
// below to, and never under a millisecond (zero would mean no limit): for a
// to of one millisecond both are one millisecond.
func LockTimeout(to time.Duration) time.Duration {
	lt := (to - max(to/10, time.Millisecond)).Truncate(time.Millisecond)
	return max(lt, time.Millisecond)
}

// Lower returns the limit to push when the operator configured configured
// for the session (zero or less: no limit) and the budget allows budgeted:
// the smaller, so that a pushed limit only ever lowers what the operator
// set. PostgreSQL and MariaDB apply the same rule on the server, inside the
// statement that sets the limit ([PostgresSetSQL], the MariaDB dialect's
// prefix), so the session's current value is used without a round trip.
func Lower(configured, budgeted time.Duration) time.Duration {
	if configured <= 0 {
		return budgeted
	}
	return min(configured, budgeted)
}

// PostgresSetSQL sets statement_timeout to $1 and lock_timeout to $2
// (milliseconds, sent as text) for the rest of the transaction, each only
// when that lowers the session's current value (a value set by the
// operator for the session, role or database, or by SET on the
// connection; 0 is "no limit"): the server computes
// least(current, pushed) in the same statement, so learning the operator's
// value costs no round trip. Inside the statement's own transaction the
// current value is the operator's, since the setting made here ends with
// the transaction. The subquery (OFFSET 0 keeps it one) reads the current
// values before they are set. Its one row holds the two values set.
const PostgresSetSQL = "SELECT " +
	"set_config('statement_timeout', least(nullif((extract(epoch FROM o.s::interval) * 1000)::int8, 0), $1::text::int8)::text, true), " +
	"set_config('lock_timeout', least(nullif((extract(epoch FROM o.l::interval) * 1000)::int8, 0), $2::text::int8)::text, true) " +
	"FROM (SELECT current_setting('statement_timeout') AS s, current_setting('lock_timeout') AS l OFFSET 0) o"

// IsPostgresTimeout reports whether a PostgreSQL error of SQLSTATE code is
// a timeout: 57014 (query_canceled, raised by statement_timeout and by a
// cancel request), or 55P03 (lock_not_available) when lockTimeout says the
// server raised it for lock_timeout rather than for NOWAIT or SKIP LOCKED
// (which the caller tells from the error's routine or message).
func IsPostgresTimeout(code string, lockTimeout bool) bool {
	return code == "57014" || code == "55P03" && lockTimeout
}

// Expired maps a statement's error to what its caller should see: an
// expiry of stage (a *[budget.Error] with [budget.OutcomeExpired], matching
// context.DeadlineExceeded and wrapping err) when isTimeout says the server
// stopped the statement for time or ctx's deadline has passed; a
// cancellation of stage (matching context.Canceled) when ctx was canceled;
// err itself otherwise, and nil for nil. An error that already is a
// *budget.Error is returned as it is. A nil isTimeout counts no error as a
// server's timeout.
func Expired(ctx context.Context, stage string, err error, isTimeout func(error) bool) error {
	if err == nil {
		return nil
	}
	var be *budget.Error
	if errors.As(err, &be) {
		return err
	}
	e := &budget.Error{Stage: stage, Outcome: budget.OutcomeExpired, Err: err}
	switch cerr := ctx.Err(); {
	case errors.Is(cerr, context.Canceled):
		e.Outcome = budget.OutcomeCanceled
	case cerr == nil && (isTimeout == nil || !isTimeout(err)):
		return err
	}
	if left, ok := budget.Available(ctx); ok {
		e.Remaining = left
	}
	if l := budget.LedgerFrom(ctx); l != nil {
		e.Budget = l.Budget()
	}
	return e
}

// Acquire takes a connection with get for a statement under ctx's budget
// and records the wait in ctx's ledger as a [budget.EventQueue] of stage
// (the adapters name it after their stage with ".acquire" appended), with
// the time remaining when it began and how it ended. An error is mapped by
// [Expired] (an expiry of stage when ctx's deadline passed during the wait).
// Both adapters wait for their pool's connections through it, so a wait is
// accounted the same way whichever pool it was.
func Acquire[C any](ctx context.Context, stage string, get func(context.Context) (C, error)) (C, error) {
	start := time.Now()
	left, _ := budget.Remaining(ctx)
	c, err := get(ctx)
	ev := budget.Event{Kind: budget.EventQueue, Stage: stage, At: start,
		Duration: time.Since(start), Remaining: left, Outcome: budget.OutcomeOK}
	if err != nil {
		err = Expired(ctx, stage, err, nil)
		ev.Outcome, ev.Err = budget.OutcomeFailed, err
		var be *budget.Error
		if errors.As(err, &be) {
			ev.Outcome = be.Outcome
		}
	}
	budget.Note(ctx, ev)
	return c, err
}
