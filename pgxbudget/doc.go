// Package pgxbudget pushes a request's budget down into PostgreSQL through
// pgx v5, so the server stops a statement when the caller's time runs out,
// even if the caller's process has died.
//
// # Shape
//
// [Pool] wraps a *pgxpool.Pool and has pgx's own method set: Query, QueryRow,
// Exec, SendBatch, Begin and BeginTx, returning pgx.Rows, pgx.Row,
// pgx.BatchResults and a [Tx], and Ping, Acquire, CopyFrom, Stat and Close.
// Code written against a pool (or against an interface holding those
// methods) changes one constructor and nothing else. What pgxpool.Pool has
// beyond that (Reset, Config, AcquireFunc, AcquireAllIdle) is on the pool
// [Pool.Pool] returns.
// A pgx QueryTracer or a ContextWatcherHandler alone was considered and
// rejected: a tracer sees a statement but cannot put a setting in front of it
// in the same round trip, and a handler only acts after the client's deadline,
// which is too late for a client that has died.
//
// # What happens to each statement
//
//  1. Waiting for a pool connection counts against the budget and is recorded
//     in the request's ledger as an [budget.EventQueue] named after the stage
//     ("postgres" by default) with ".acquire" appended.
//
//  2. The time left for the statement is the budget's available time
//     ([budget.Available]) less a reserve for the answer to travel back
//     (10 ms by default, never more than a fifth of what is available),
//     clamped to the longest timeout PostgreSQL accepts (2³¹−1 ms, about
//     24.8 days; sqlbudget.Timeout). When that is under one millisecond the
//     statement is refused with an error matching [budget.ErrInsufficient]
//     and never reaches the server.
//
//  3. The statement is sent in one pipeline (one Sync) behind a
//     set_config of statement_timeout and lock_timeout (local to the
//     transaction), so the server enforces the budget itself with no extra
//     round trip. The pushed values only ever lower what the operator
//     configured for the session, role or database (or set with SET on the
//     connection; 0 is "no limit"): the server takes the smaller in the
//     same statement (sqlbudget.PostgresSetSQL), so a session
//     statement_timeout of 1 s still stops a statement at 1 s under a 10 s
//     budget, as on the plain pool. lock_timeout is nine tenths of the
//     statement timeout (sqlbudget.LockTimeout): the statement's timer
//     starts before any lock wait, so an equal lock_timeout could never
//     fire first, and a statement blocked on a lock is reported as a lock
//     timeout (55P03) rather than as slow work (57014).
//
//     A pipeline with one Sync is one implicit transaction, so the settings
//     end with it and never leak to the next user of the connection. Inside
//     a [Tx] they must end with the statement too: the settings statement
//     keeps the values it replaces and a statement queued after the
//     statement, in the same pipeline, puts them back, so a later statement
//     without a deadline runs under the operator's settings, exactly as on
//     the plain pool. (When the statement fails, the transaction is
//     aborted, and its end or a rollback to a savepoint puts them back.) A
//     transaction begun with a budget also lowers
//     idle_in_transaction_session_timeout, at the BEGIN and at each
//     statement, so a client that dies in the middle of it does not hold
//     its locks for long; a transaction begun without one leaves it alone.
//
//     Query, QueryRow and Exec drive pgconn's pipeline themselves: one Bind
//     and one Execute for the settings, the same for the statement (in a
//     transaction, a prepared statement putting the settings back
//     follows), one Sync. For that the package prepares statements on each connection
//     under names of its own (pgxbudget_1, pgxbudget_2, …) and keeps their
//     descriptions in a cache per connection, bounded like pgx's by the
//     connection's StatementCacheCapacity, least recently used out first
//     and deallocated in the next pipeline. A statement seen for the first
//     time on a connection costs one more round trip, as in pgx, to prepare
//     it, and that round trip carries the settings too, so describing it is
//     bounded by the server as well. Arguments are encoded as pgx encodes
//     them (pgx.ExtendedQueryBuilder and the connection's type map). This
//     path is taken when the pool's connections use pgx's default
//     QueryExecModeCacheStatement with a statement cache and no tracer, and
//     for every call whose arguments begin with pgx options: those are read
//     as pgx reads them (a QueryRewriter such as pgx.NamedArgs is applied,
//     result formats are asked for, QueryExecModeExec sends the statement
//     unprepared, and so does QueryExecModeSimpleProtocol, which pgx
//     documents as behaving as QueryExecModeExec: one statement per call,
//     since the settings cannot share a simple query without interpolating
//     the arguments, which pgx does not export; QueryExecModeCacheDescribe
//     and QueryExecModeDescribeExec use the package's prepared statements),
//     and the answer is the plain pool's. The rest goes through a pgx.Batch
//     with the settings queued first, which follows the configured query
//     exec mode and calls the tracer: other modes, a tracer, SendBatch, and
//     SQL that is a single word or that the server will not prepare (a
//     syntax error, outside a transaction, which such an error would
//     abort), such as the name of a statement prepared with
//     pgx.Conn.Prepare. If the package's statements disappear from a
//     connection (DEALLOCATE ALL, DISCARD ALL), the cache is emptied and the
//     statement, which has not run, is prepared and sent again; outside a
//     transaction that is invisible to the caller. A statement whose result
//     type has changed under it (SQLSTATE 0A000) fails once, as in pgx, and
//     is prepared again on its next use.
//
//  4. An error SQLSTATE 57014 (statement_timeout) or 55P03 from lock_timeout,
//     or any error once the context's deadline has passed, is returned as a
//     *[budget.Error] with [budget.OutcomeExpired] naming the stage, which
//     matches context.DeadlineExceeded and wraps the *pgconn.PgError.
//     [IsTimeout] classifies the same errors for a [budget.Op]'s Expired hook.
//
// # Client-side expiry keeps the connection
//
// pgx by default closes a connection whose context ends mid-statement, so
// every timeout costs a new connection. [Configure] installs a context-watcher
// handler that keeps it:
//
//   - For a statement whose budget the server enforces (statement_timeout was
//     set), the server's answer is already coming, since its timer fired a
//     reserve before the deadline: the handler sends nothing and waits for
//     it, up to the grace (100 ms by default) plus one second before giving
//     the connection up. A burst of late answers therefore never becomes a
//     burst of cancel requests, each of which costs the server a new process.
//   - For a statement without a server-side timeout (a context with no
//     budget, or canceled by its caller), it sends PostgreSQL a cancel
//     request after a short delay (the reserve, unless the answer came
//     meanwhile), waits up to the grace for the answer, and returns the
//     connection to the pool only once the cancel request has been
//     acknowledged and has settled (in the background, so the caller is not
//     held up), so a late cancel cannot hit the connection's next statement.
//     A cancel request not acknowledged within a second closes the connection.
//
// pgxpool pings a connection idle for over a second before handing it out,
// under the acquiring caller's deadline. When the ping outlives that
// deadline, pgxpool puts the connection back without AfterRelease; its
// cancel is settled when the connection is next acquired, before any
// statement runs on it, so no cancel request can hit a later statement, and
// no connection is lost or kept from the pool.
//
// pgx's own CancelRequestContextWatcherHandler keeps the connection too, but
// it makes the caller wait for the settling (100 ms past the deadline).
//
// # Statements that cannot run in a transaction block
//
// Because the settings and the statement share one implicit transaction,
// statements that refuse to run in a transaction block (CREATE INDEX
// CONCURRENTLY, VACUUM, CREATE DATABASE) fail through [Pool]. Run them through
// [Pool.Pool] with a context deadline instead.
//
// # An idempotency store
//
// [IdempotencyStore] keeps idempotency keys and first answers in a table,
// for the idempotency middleware (httpbudget's Idempotent) of every replica
// sharing the database: one statement reserves a key, so exactly one
// request of any number, on any replica, runs the work. Its type
// documentation gives the table's DDL.
package pgxbudget
