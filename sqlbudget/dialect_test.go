package sqlbudget_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/sqlbudget"
)

func TestLimitRewrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		d       sqlbudget.Dialect
		query   string
		to      time.Duration
		want    string
		limited bool
	}{
		{"mariadb", sqlbudget.MariaDB, "SELECT SLEEP(5)", 1234 * time.Millisecond,
			"SET STATEMENT max_statement_time=IF(@@max_statement_time > 0 AND @@max_statement_time < 1.234, @@max_statement_time, 1.234) FOR SELECT SLEEP(5)", true},
		{"mariadb short", sqlbudget.MariaDB, "UPDATE t SET a = 1", 7 * time.Millisecond,
			"SET STATEMENT max_statement_time=IF(@@max_statement_time > 0 AND @@max_statement_time < 0.007, @@max_statement_time, 0.007) FOR UPDATE t SET a = 1", true},
		{"mysql select", sqlbudget.MySQL, "SELECT a FROM t", 90 * time.Millisecond,
			"SELECT /*+ MAX_EXECUTION_TIME(90) */ a FROM t", true},
		{"mysql lower case and spaces", sqlbudget.MySQL, "\n  select a from t", 90 * time.Millisecond,
			"\n  select /*+ MAX_EXECUTION_TIME(90) */ a from t", true},
		{"mysql existing hint", sqlbudget.MySQL, "SELECT /*+ BKA(t) */ a FROM t", 90 * time.Millisecond,
			"SELECT /*+ MAX_EXECUTION_TIME(90)  BKA(t) */ a FROM t", true},
		{"mysql update", sqlbudget.MySQL, "UPDATE t SET a = 1", 90 * time.Millisecond,
			"UPDATE t SET a = 1", false},
		{"mysql selectx", sqlbudget.MySQL, "SELECTX", 90 * time.Millisecond, "SELECTX", false},
		{"postgres", sqlbudget.PostgreSQL, "SELECT 1", 90 * time.Millisecond, "SELECT 1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, limited := tc.d.Limit(tc.query, tc.to)
			if got != tc.want || limited != tc.limited {
				t.Errorf("Limit(%q, %v) = %q, %v; want %q, %v", tc.query, tc.to, got, limited, tc.want, tc.limited)
			}
		})
	}
}

func FuzzMySQLHint(f *testing.F) {
	for _, s := range []string{"SELECT 1", " select /*+ X */ 1", "SELECT", "UPDATE", "", "SELECT/*+*/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		got, limited := sqlbudget.MySQL.Limit(q, 5*time.Millisecond)
		if !limited {
			if got != q {
				t.Fatalf("unlimited query changed: %q -> %q", q, got)
			}
			return
		}
		if !strings.Contains(got, "MAX_EXECUTION_TIME(5)") || len(got) <= len(q) {
			t.Fatalf("Limit(%q) = %q", q, got)
		}
	})
}

type sqlStateError string

func (e sqlStateError) Error() string    { return "ERROR: " + string(e) }
func (e sqlStateError) SQLState() string { return string(e) }

type lockTimeoutError struct{ sqlStateError }

func (lockTimeoutError) Error() string {
	return "ERROR: canceling statement due to lock timeout (SQLSTATE 55P03)"
}

type mysqlError struct {
	Number  uint16
	Message string
}

func (e *mysqlError) Error() string { return fmt.Sprintf("Error %d: %s", e.Number, e.Message) }

func TestIsTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		d    sqlbudget.Dialect
		err  error
		want bool
	}{
		{"pg statement timeout", sqlbudget.PostgreSQL, fmt.Errorf("q: %w", sqlStateError("57014")), true},
		{"pg lock timeout", sqlbudget.PostgreSQL, lockTimeoutError{"55P03"}, true},
		{"pg nowait", sqlbudget.PostgreSQL, sqlStateError("55P03"), false},
		{"pg unique", sqlbudget.PostgreSQL, sqlStateError("23505"), false},
		{"mariadb 1969", sqlbudget.MariaDB, &mysqlError{Number: 1969}, true},
		{"mysql 3024", sqlbudget.MySQL, fmt.Errorf("q: %w", &mysqlError{Number: 3024}), true},
		{"mysql other", sqlbudget.MySQL, &mysqlError{Number: 1062, Message: "Duplicate entry"}, false},
		{"mysql message only", sqlbudget.MySQL, errors.New("Query execution was interrupted (max_statement_time exceeded)"), true},
		{"expiry", sqlbudget.MySQL, &budget.Error{Outcome: budget.OutcomeExpired}, true},
		{"nil", sqlbudget.PostgreSQL, nil, false},
		{"pg error for mysql", sqlbudget.MySQL, sqlStateError("57014"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.d.IsTimeout(tc.err); got != tc.want {
				t.Errorf("%v.IsTimeout(%v) = %v, want %v", tc.d, tc.err, got, tc.want)
			}
		})
	}
}

func TestMisconfigured(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		db   *sqlbudget.DB
	}{
		{"nil db", sqlbudget.New(nil, sqlbudget.PostgreSQL)},
		{"unknown dialect", sqlbudget.New(&sql.DB{}, sqlbudget.Dialect(9))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.db.ExecContext(context.Background(), "SELECT 1")
			if !errors.Is(err, budget.ErrMisconfigured) {
				t.Errorf("err = %v, want ErrMisconfigured", err)
			}
		})
	}
}

func TestDialectString(t *testing.T) {
	t.Parallel()
	for d, want := range map[sqlbudget.Dialect]string{
		sqlbudget.PostgreSQL: "postgres", sqlbudget.MySQL: "mysql", sqlbudget.MariaDB: "mariadb", 0: "Dialect(0)",
	} {
		if got := d.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", d, got, want)
		}
	}
}
