// Package sqlbudget pushes a request's budget down into the database for any
// database/sql driver, so the server stops a statement when the caller's
// time runs out, even if the caller's process has died. It imports no
// driver: the SQL it adds is chosen by a [Dialect].
//
// [DB] wraps a *sql.DB with database/sql's own method names (ExecContext,
// QueryContext, QueryRowContext). For each statement whose context has a
// deadline:
//
//  1. Taking a connection from the pool counts against the budget and is
//     recorded in the request's ledger as a [budget.EventQueue] named after
//     the stage with ".acquire" appended.
//  2. The statement's server-side limit is the budget's available time
//     ([budget.Available]) less a reserve for the answer to travel back
//     (20 ms by default, never more than a fifth of what is available),
//     clamped to the longest limit the server accepts ([Timeout],
//     [MaxPostgresTimeout], [MaxMariaDBStatementTime],
//     [MaxMySQLExecutionTime]). When that is under one millisecond the
//     statement is refused with an error matching [budget.ErrInsufficient]
//     and never reaches the server.
//  3. The limit travels with the statement, as the dialect allows:
//     [PostgreSQL] runs it in a transaction that starts with
//     set_config('statement_timeout', …, true) and the same for
//     lock_timeout (database/sql cannot pipeline, so this costs the BEGIN,
//     the settings and the COMMIT as round trips of their own, and the
//     limit is shortened by the BEGIN's round trip, which the settings'
//     takes again; pgxbudget does it in the statement's own round trip); [MariaDB] prefixes it with
//     SET STATEMENT max_statement_time=… FOR, in the same round trip;
//     [MySQL] adds the MAX_EXECUTION_TIME optimizer hint to a SELECT, in the
//     same round trip (MySQL has no per-statement limit for other
//     statements, which run with the client-side deadline only).
//     For PostgreSQL and MariaDB the limit only ever lowers what the
//     operator configured for the session, role, user or database (0 is
//     "no limit"): the server takes the smaller in the statement that sets
//     it, at no extra round trip. PostgreSQL's lock_timeout is nine tenths
//     of the statement timeout ([LockTimeout]), so a statement blocked on a
//     lock is reported as a lock timeout. MySQL's hint takes a constant and
//     replaces the session's max_execution_time for that SELECT, so a
//     session limit shorter than the budget is not kept there. Each limit
//     ends with its statement (PostgreSQL's with the statement's own
//     transaction, MariaDB's SET STATEMENT and MySQL's hint with the
//     statement), so a statement without a deadline that follows runs under
//     the operator's settings.
//  4. An error the dialect reports as a server-side timeout ([Dialect.IsTimeout]),
//     or any error once the context's deadline has passed, is returned as a
//     *[budget.Error] with [budget.OutcomeExpired] naming the stage, which
//     matches context.DeadlineExceeded and wraps the driver's error.
//
// Statements whose context has no deadline run as on the *sql.DB.
//
// # Shared with pgxbudget
//
// The arithmetic and the mapping every adapter pushing a budget into a
// database needs are exported here, and pgxbudget (a module of its own)
// uses them too, so both compute them one way: [Timeout] (the reserve and
// the clamp), [LockTimeout], [Lower] and [PostgresSetSQL] (the lower-only
// rule), [IsPostgresTimeout] and [Expired] (SQLSTATE 57014 and 55P03 as
// expiries), and [Acquire] (the wait for a connection in the ledger).
package sqlbudget
