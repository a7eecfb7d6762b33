package sqlbudget_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/sqlbudget"
)

func TestTimeout(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	for _, tc := range []struct {
		name                  string
		avail, reserve, limit time.Duration
		want                  time.Duration
	}{
		{"reserve taken", time.Second, 10 * ms, sqlbudget.MaxPostgresTimeout, 990 * ms},
		{"reserve at most a fifth", 20 * ms, 10 * ms, sqlbudget.MaxPostgresTimeout, 16 * ms},
		{"rounded down", 1500 * time.Microsecond, 0, sqlbudget.MaxPostgresTimeout, ms},
		{"under a millisecond", 900 * time.Microsecond, 0, sqlbudget.MaxPostgresTimeout, 0},
		{"negative reserve", time.Second, -time.Second, sqlbudget.MaxPostgresTimeout, time.Second},
		{"postgres clamp", 2200000000 * ms, 10 * ms, sqlbudget.MaxPostgresTimeout, 2147483647 * ms},
		{"mariadb clamp", 100 * 365 * 24 * time.Hour, 0, sqlbudget.MaxMariaDBStatementTime, 31536000 * time.Second},
		{"mysql clamp", 100 * 365 * 24 * time.Hour, 0, sqlbudget.MaxMySQLExecutionTime, 4294967295 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := sqlbudget.Timeout(tc.avail, tc.reserve, tc.limit); got != tc.want {
				t.Errorf("Timeout(%v, %v, %v) = %v, want %v", tc.avail, tc.reserve, tc.limit, got, tc.want)
			}
		})
	}
}

func TestLockTimeout(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	for _, tc := range []struct{ to, want time.Duration }{
		{ms, ms}, {2 * ms, ms}, {9 * ms, 8 * ms}, {40 * ms, 36 * ms}, {time.Second, 900 * ms},
		{sqlbudget.MaxPostgresTimeout, 1932735282 * ms},
	} {
		got := sqlbudget.LockTimeout(tc.to)
		if got != tc.want {
			t.Errorf("LockTimeout(%v) = %v, want %v", tc.to, got, tc.want)
		}
		if tc.to > ms && got >= tc.to {
			t.Errorf("LockTimeout(%v) = %v, want it below the statement timeout", tc.to, got)
		}
	}
}

func TestLower(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ configured, budgeted, want time.Duration }{
		{0, 5 * time.Second, 5 * time.Second},
		{-1, 5 * time.Second, 5 * time.Second},
		{time.Second, 5 * time.Second, time.Second},
		{10 * time.Second, 5 * time.Second, 5 * time.Second},
	} {
		if got := sqlbudget.Lower(tc.configured, tc.budgeted); got != tc.want {
			t.Errorf("Lower(%v, %v) = %v, want %v", tc.configured, tc.budgeted, got, tc.want)
		}
	}
}

// TestExpired checks the mapping both adapters share.
func TestExpired(t *testing.T) {
	t.Parallel()
	timeout := errors.New("server timeout")
	other := errors.New("syntax error")
	isTimeout := func(err error) bool { return errors.Is(err, timeout) }
	live, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	gone, cancel2 := context.WithCancel(context.Background())
	cancel2()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		err     error
		outcome budget.Outcome // 0: the error itself
	}{
		{"server timeout", live, timeout, budget.OutcomeExpired},
		{"other error", live, other, 0},
		{"canceled", gone, other, budget.OutcomeCanceled},
	} {
		got := sqlbudget.Expired(tc.ctx, "db", tc.err, isTimeout)
		var be *budget.Error
		switch {
		case tc.outcome == 0 && got != tc.err:
			t.Errorf("%s: got %v, want the error itself", tc.name, got)
		case tc.outcome != 0 && (!errors.As(got, &be) || be.Outcome != tc.outcome || be.Stage != "db" || !errors.Is(got, tc.err)):
			t.Errorf("%s: got %#v, want a %v of db wrapping the error", tc.name, got, tc.outcome)
		}
	}
	if sqlbudget.Expired(live, "db", nil, isTimeout) != nil {
		t.Error("Expired(nil) != nil")
	}
}
