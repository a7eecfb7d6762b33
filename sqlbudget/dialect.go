package sqlbudget

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Dialect says how a database takes a per-statement time limit.
type Dialect uint8

const (
	// PostgreSQL sets statement_timeout and lock_timeout ([LockTimeout]:
	// nine tenths of it) with set_config(…, true) in a transaction around
	// the statement ([PostgresSetSQL]), each only lowering the session's
	// value, and at most [MaxPostgresTimeout]. It works with any PostgreSQL
	// driver whose placeholders are $1, $2 (pgx's stdlib, lib/pq).
	PostgreSQL Dialect = iota + 1
	// MySQL adds the MAX_EXECUTION_TIME(ms) optimizer hint to SELECT
	// statements (MySQL 5.7.8 and later), at most [MaxMySQLExecutionTime].
	// Other statements are not limited on the server. The hint takes a
	// constant and replaces the session's max_execution_time for the
	// statement, so a session limit shorter than the budget is not kept
	// for a SELECT with a deadline.
	MySQL
	// MariaDB prefixes every statement with
	// SET STATEMENT max_statement_time=… FOR (MariaDB 10.1.2 and later),
	// the smaller of the budget's limit (at most [MaxMariaDBStatementTime])
	// and the session's max_statement_time (0: none), computed by the
	// server in the same statement.
	MariaDB
)

// String returns "postgres", "mysql" or "mariadb": the default stage name.
func (d Dialect) String() string {
	switch d {
	case PostgreSQL:
		return "postgres"
	case MySQL:
		return "mysql"
	case MariaDB:
		return "mariadb"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

func (d Dialect) valid() bool { return d >= PostgreSQL && d <= MariaDB }

// IsTimeout reports whether err is the server saying a statement ran out of
// time under the limit this dialect sets:
//
//   - PostgreSQL: SQLSTATE 57014 (statement_timeout, or a cancel request) or
//     55P03 with the message of lock_timeout ("canceling statement due to
//     lock timeout"; a 55P03 from NOWAIT is not a timeout). The SQLSTATE is
//     read from a SQLState() string method, which pgx's and lib/pq's errors
//     have.
//   - MySQL and MariaDB: error 3024 (MAX_EXECUTION_TIME exceeded) or 1969
//     (max_statement_time exceeded), read from an error's Number field
//     (go-sql-driver/mysql's *MySQLError) or, failing that, from its
//     message.
//
// It also reports true for this package's expiry errors. Plug it into a
// [budget.Op]'s Expired hook for statements run outside [DB]. It is safe for
// concurrent use.
func (d Dialect) IsTimeout(err error) bool {
	if err == nil {
		return false
	}
	if isExpiry(err) {
		return true
	}
	switch d {
	case PostgreSQL:
		var s interface{ SQLState() string }
		if !errors.As(err, &s) {
			return false
		}
		return IsPostgresTimeout(s.SQLState(), strings.Contains(err.Error(), "lock timeout"))
	case MySQL, MariaDB:
		for e := err; e != nil; e = errors.Unwrap(e) {
			if n, ok := errorNumber(e); ok {
				return n == 3024 || n == 1969
			}
		}
		m := err.Error()
		return strings.Contains(m, "max_statement_time exceeded") ||
			strings.Contains(m, "maximum statement execution time exceeded")
	}
	return false
}

// errorNumber reads a MySQL error number from an error struct's Number
// field, as go-sql-driver/mysql's *MySQLError carries it, without importing
// the driver.
func errorNumber(err error) (uint64, bool) {
	v := reflect.ValueOf(err)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return 0, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0, false
	}
	f := v.FieldByName("Number")
	if !f.IsValid() {
		return 0, false
	}
	switch f.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		return f.Uint(), true
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		return uint64(max(f.Int(), 0)), true
	}
	return 0, false
}

// longest returns the longest limit the dialect's server accepts.
func (d Dialect) longest() time.Duration {
	switch d {
	case MariaDB:
		return MaxMariaDBStatementTime
	case MySQL:
		return MaxMySQLExecutionTime
	}
	return MaxPostgresTimeout
}

// limit rewrites query for a server-side limit of to, or reports false when
// the dialect cannot limit it (a MySQL statement other than SELECT).
// PostgreSQL needs no rewrite: the limit is set in the transaction.
func (d Dialect) limit(query string, to time.Duration) (string, bool) {
	switch d {
	case MariaDB:
		// The server keeps the session's max_statement_time (the
		// operator's, for the session or the user; 0 is no limit) when it
		// is shorter: the limit only ever lowers it.
		ms := to.Milliseconds()
		sec := strconv.FormatInt(ms/1000, 10) + "." + pad3(ms%1000)
		return "SET STATEMENT max_statement_time=IF(@@max_statement_time > 0 AND @@max_statement_time < " + sec +
			", @@max_statement_time, " + sec + ") FOR " + query, true
	case MySQL:
		return mysqlHint(query, to.Milliseconds())
	}
	return query, true
}

func pad3(n int64) string {
	s := strconv.FormatInt(n, 10)
	return strings.Repeat("0", 3-len(s)) + s
}

// mysqlHint puts MAX_EXECUTION_TIME(ms) into a SELECT's optimizer hint
// comment, creating one right after SELECT or joining the one already there
// (MySQL reads only the first hint comment after the keyword).
func mysqlHint(query string, ms int64) (string, bool) {
	rest := strings.TrimLeft(query, " \t\r\n")
	if len(rest) < 6 || !strings.EqualFold(rest[:6], "SELECT") {
		return query, false
	}
	if len(rest) > 6 && !isSpace(rest[6]) && rest[6] != '/' {
		return query, false // SELECTX…: not the keyword
	}
	lead := query[:len(query)-len(rest)]
	after := strings.TrimLeft(rest[6:], " \t\r\n")
	hint := "MAX_EXECUTION_TIME(" + strconv.FormatInt(ms, 10) + ")"
	if strings.HasPrefix(after, "/*+") {
		return lead + rest[:6] + " /*+ " + hint + " " + after[3:], true
	}
	return lead + rest[:6] + " /*+ " + hint + " */ " + after, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
