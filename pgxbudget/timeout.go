package pgxbudget

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/sqlbudget"
)

// The settings travel as a parameterized statement so that it is prepared
// and cached once per connection: SET LOCAL takes no parameters, and a
// literal that changes with every statement would fill the statement cache.
// $1 is the statement timeout and $2 the lock timeout, in milliseconds, sent
// as text; the server lowers the operator's values to them, never raises
// them (sqlbudget.PostgresSetSQL, shared with sqlbudget).
//
// In a transaction a statement's settings must also end with it, so that a
// later statement without a deadline runs under the operator's values:
// setTxSQL first keeps the values it replaces in two settings of this
// package's own (pgxbudget.statement_timeout, pgxbudget.lock_timeout; like
// the others, local to the transaction), and restoreSQL, queued after the
// statement in the same pipeline, puts them back. In a transaction begun
// with a budget, setTxIdleSQL also lowers idle_in_transaction_session_timeout
// to $1, so that a client that dies mid-transaction does not hold its locks
// past its budget; that one is the transaction's, and is not put back.
const (
	setSQL = sqlbudget.PostgresSetSQL

	setTxSQL = "SELECT set_config('pgxbudget.statement_timeout', o.s, true), set_config('pgxbudget.lock_timeout', o.l, true), " +
		"set_config('statement_timeout', least(nullif((extract(epoch FROM o.s::interval) * 1000)::int8, 0), $1::text::int8)::text, true), " +
		"set_config('lock_timeout', least(nullif((extract(epoch FROM o.l::interval) * 1000)::int8, 0), $2::text::int8)::text, true) " +
		"FROM (SELECT current_setting('statement_timeout') AS s, current_setting('lock_timeout') AS l OFFSET 0) o"

	setTxIdleSQL = "SELECT set_config('pgxbudget.statement_timeout', o.s, true), set_config('pgxbudget.lock_timeout', o.l, true), " +
		"set_config('statement_timeout', least(nullif((extract(epoch FROM o.s::interval) * 1000)::int8, 0), $1::text::int8)::text, true), " +
		"set_config('lock_timeout', least(nullif((extract(epoch FROM o.l::interval) * 1000)::int8, 0), $2::text::int8)::text, true), " +
		"set_config('idle_in_transaction_session_timeout', least(nullif((extract(epoch FROM o.i::interval) * 1000)::int8, 0), $1::text::int8)::text, true) " +
		"FROM (SELECT current_setting('statement_timeout') AS s, current_setting('lock_timeout') AS l, " +
		"current_setting('idle_in_transaction_session_timeout') AS i OFFSET 0) o"

	restoreSQL = "SELECT set_config('statement_timeout', current_setting('pgxbudget.statement_timeout'), true), " +
		"set_config('lock_timeout', current_setting('pgxbudget.lock_timeout'), true)"
)

// settingsKind says which settings statement a statement runs behind.
type settingsKind uint8

const (
	plain    settingsKind = iota // outside a transaction: setSQL
	inTx                         // in a transaction begun without a budget: setTxSQL, then restoreSQL
	inTxIdle                     // in a transaction begun with a budget: setTxIdleSQL, then restoreSQL
)

func (k settingsKind) sql() string {
	switch k {
	case inTx:
		return setTxSQL
	case inTxIdle:
		return setTxIdleSQL
	}
	return setSQL
}

// restores reports whether a statement's settings are put back after it.
func (k settingsKind) restores() bool { return k != plain }

// budgetFor reads ctx's budget for a statement: whether it has a deadline,
// and the statement timeout in whole milliseconds (see
// sqlbudget.Timeout: the time available less the reserve, clamped to what
// PostgreSQL accepts). When the timeout is under a millisecond (zero would
// mean "no timeout" to PostgreSQL) it returns the refusal to report,
// recorded in ctx's ledger.
func (c *config) budgetFor(ctx context.Context) (ms int64, bounded bool, err error) {
	avail, ok := budget.Available(ctx)
	if !ok {
		return 0, false, nil
	}
	to := sqlbudget.Timeout(avail, c.reserve, sqlbudget.MaxPostgresTimeout)
	if to < time.Millisecond {
		return 0, true, budget.Refuse(ctx, c.stage, time.Now(), avail, time.Millisecond)
	}
	return to.Milliseconds(), true, nil
}

// lockMillis returns the lock timeout for a statement timeout of ms.
func lockMillis(ms int64) int64 {
	return sqlbudget.LockTimeout(time.Duration(ms) * time.Millisecond).Milliseconds()
}

// settings returns a batch whose first statement sets the timeouts for a
// statement timeout of ms.
func settings(ms int64, k settingsKind) *pgx.Batch {
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, 3)}
	b.Queue(k.sql(), strconv.FormatInt(ms, 10), strconv.FormatInt(lockMillis(ms), 10))
	return b
}

// beginSQL renders the BEGIN of a transaction followed by the lowering of
// idle_in_transaction_session_timeout to ms: sent without parameters, pgx
// sends it as one simple query, so the transaction starts with its budget
// in one round trip. statement_timeout and lock_timeout are not set for the
// transaction: each statement sets them for itself.
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
	b.WriteString("; SELECT set_config('idle_in_transaction_session_timeout', least(nullif((extract(epoch FROM " +
		"current_setting('idle_in_transaction_session_timeout')::interval) * 1000)::int8, 0), ")
	b.WriteString(strconv.FormatInt(ms, 10))
	b.WriteString(")::text, true)")
	return b.String()
}
