package pgxbudget_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/timebudget/budget"
)

// benchSelect1 runs run under a budget of its own, one second, as a request
// would: the budget is pushed down like any other. When the server runs on
// this machine it also reports the CPU time its backend spent per call
// (server-µs/op), read from /proc: what the settings statement costs the
// server, apart from the client and the scheduling.
func benchSelect1(b *testing.B, pool *pgxpool.Pool, run func(ctx context.Context) error) {
	b.ReportAllocs()
	c, err := pool.Acquire(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	pid := c.Conn().PgConn().PID()
	c.Release()
	cpu0, local := backendCPU(pid)
	for b.Loop() {
		ctx, cancel := budget.Start(context.Background(), time.Second)
		err := run(ctx)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
	if cpu1, ok := backendCPU(pid); local && ok {
		b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(b.N), "server-µs/op")
	}
}

// backendCPU returns the CPU time (user and system) the server process pid
// has used, if it runs on this machine; /proc counts it in ticks of 10 ms.
func backendCPU(pid uint32) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+k) * 10 * time.Millisecond, true
}

// BenchmarkSelect1Plain is the baseline: SELECT 1 through pgxpool with the
// same budget in the context, enforced by pgx on the client only.
func BenchmarkSelect1Plain(b *testing.B) {
	p, _ := newPool(b, 1)
	plain := p.Pool()
	benchSelect1(b, plain, func(ctx context.Context) error {
		var n int
		return plain.QueryRow(ctx, "SELECT 1").Scan(&n)
	})
}

// BenchmarkSelect1Budget is SELECT 1 through pgxbudget: the budget is pushed
// down as statement_timeout and lock_timeout in the same round trip.
func BenchmarkSelect1Budget(b *testing.B) {
	p, _ := newPool(b, 1)
	benchSelect1(b, p.Pool(), func(ctx context.Context) error {
		var n int
		return p.QueryRow(ctx, "SELECT 1").Scan(&n)
	})
}
