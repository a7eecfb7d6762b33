package pgxbudget

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/sqlbudget"
)

// IsTimeout reports whether err says a statement ran out of time on the
// server: SQLSTATE 57014 (query_canceled, raised by statement_timeout and by
// a cancel request) or 55P03 (lock_not_available) when raised by
// lock_timeout, or an error of this package reporting an expiry. A 55P03 from
// NOWAIT or SKIP LOCKED is not a timeout and does not match: lock_timeout is
// told apart by the server routine that raised it, which, unlike the message,
// is not translated.
//
// Plug it into a [budget.Op] whose work runs statements through plain pgx, so
// those timeouts are recorded as cut-off samples:
//
//	op := &budget.Op{Name: "orders", Expired: pgxbudget.IsTimeout}
//
// Statements run through [Pool] already return such errors as expiries that
// match context.DeadlineExceeded, which an Op recognizes without the hook.
// IsTimeout is safe for concurrent use and does not allocate.
func IsTimeout(err error) bool {
	var be *budget.Error
	if errors.As(err, &be) {
		return be.Outcome == budget.OutcomeExpired
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return sqlbudget.IsPostgresTimeout(pe.Code, pe.Routine == "ProcessInterrupts")
	}
	return false
}

// expired maps err to what the caller should see, as sqlbudget.Expired
// does (shared with sqlbudget): an expiry of stage when the server stopped
// the statement for time or ctx's deadline has passed, a cancellation of
// stage (matching context.Canceled) when the caller gave up, err itself
// otherwise.
func expired(ctx context.Context, stage string, err error) error {
	return sqlbudget.Expired(ctx, stage, err, IsTimeout)
}
