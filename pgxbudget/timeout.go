package pgxbudget

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/timebudget/budget"
)

// The settings travel as a parameterized statement so that pgx prepares and
// caches it once: SET LOCAL takes no parameters, and a literal that changes
// with every statement would fill pgx's statement cache.
const (
	setSQL   = "SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $1, true)"
	setTxSQL = "SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $1, true), " +
		"set_config('idle_in_transaction_session_timeout', $1, true)"
)

// statementTimeout returns the server-side timeout for a statement that may
// use avail: avail less the reserve, the reserve being at most a fifth of
// avail. It is rounded down to whole milliseconds, because a timeout that
// ends after the deadline is worse than one that ends a little before.
func (c *config) statementTimeout(avail time.Duration) time.Duration {
	to := avail - min(c.reserve, avail/5)
	return to.Truncate(time.Millisecond)
}

// budgetFor reads ctx's budget for a statement: whether it has a deadline,
// and the statement timeout in whole milliseconds. When the timeout is under
// a millisecond (zero would mean "no timeout" to PostgreSQL) it returns the
// refusal to report, recorded in ctx's ledger.
func (c *config) budgetFor(ctx context.Context) (ms int64, bounded bool, err error) {
	avail, ok := budget.Available(ctx)
	if !ok {
		return 0, false, nil
	}
	to := c.statementTimeout(avail)
	if to < time.Millisecond {
		return 0, true, budget.Refuse(ctx, c.stage, time.Now(), avail, time.Millisecond)
	}
	return to.Milliseconds(), true, nil
}

// settings returns a batch whose first statement sets the timeouts to ms.
func settings(ms int64, tx bool) *pgx.Batch {
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, 2)}
	q := setSQL
	if tx {
		q = setTxSQL
	}
	b.Queue(q, strconv.FormatInt(ms, 10))
	return b
}

// beginSQL renders the BEGIN of a transaction followed by SET LOCAL of the
// three timeouts: sent without parameters, pgx sends it as one simple query,
// so the transaction starts with its budget in one round trip.
func beginSQL(opts pgx.TxOptions, ms int64) string {
	var b strings.Builder
	if opts.BeginQuery != "" {
		b.WriteString(opts.BeginQuery)
	} else {
		b.WriteString("begin")
		if opts.IsoLevel != "" {
			b.WriteString(" isolation level ")
			b.WriteString(string(opts.IsoLevel))
		}
		if opts.AccessMode != "" {
			b.WriteByte(' ')
			b.WriteString(string(opts.AccessMode))
		}
		if opts.DeferrableMode != "" {
			b.WriteByte(' ')
			b.WriteString(string(opts.DeferrableMode))
		}
	}
	n := strconv.FormatInt(ms, 10)
	for _, s := range [...]string{"statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"} {
		b.WriteString("; SET LOCAL ")
		b.WriteString(s)
		b.WriteString(" = ")
		b.WriteString(n)
	}
	return b.String()
}
