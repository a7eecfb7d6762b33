package pgxbudget_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/pgxbudget"
)

// The killed-client test runs this test binary again as a client process:
// with childEnv set, TestMain calls runChild instead of running tests.
const (
	childEnv   = "PGXBUDGET_TEST_CHILD" // the application_name to use
	childCalls = "PGXBUDGET_TEST_CALLS"
)

// runChild opens its connections, says "ready", reads the deadline (Unix
// nanoseconds) from stdin, starts the statements the parent watches, says
// "started" and waits to be killed.
func runChild() int {
	app := os.Getenv(childEnv)
	n, err1 := strconv.Atoi(os.Getenv(childCalls))
	cfg, err2 := pgxpool.ParseConfig(os.Getenv(envPostgres))
	if err1 != nil || err2 != nil {
		fmt.Println("bad child environment:", err1, err2)
		return 2
	}
	cfg.MaxConns = int32(n)
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	p, err := pgxbudget.New(context.Background(), cfg)
	if err != nil {
		fmt.Println("pool:", err)
		return 2
	}
	conns := make([]*pgxpool.Conn, 0, n)
	for range n {
		c, err := p.Pool().Acquire(context.Background())
		if err != nil {
			fmt.Println("acquire:", err)
			return 2
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	fmt.Println("ready")
	var ns int64
	if _, err := fmt.Scanln(&ns); err != nil {
		fmt.Println("deadline:", err)
		return 2
	}
	ctx, cancel := budget.StartUntil(context.Background(), time.Unix(0, ns))
	defer cancel()
	for range n {
		go func() { _, _ = p.Exec(ctx, longSleep) }()
	}
	fmt.Println("started")
	select {}
}

// TestKilledClientServerStillStops starts statements with a budget in a
// child process and kills it mid-statement: nobody is left to send a cancel,
// yet the server stops every statement at its deadline, because the
// deadline went to the server as statement_timeout. The statements must
// still run after the kill (a closed socket does not stop them) and be gone
// soon after the deadline.
//
// The statements are longSleep, so "gone soon after the deadline" and "still
// running a minute later" are far apart: the bound on how soon is
// generous enough for a loaded two-core machine, where the server's timer
// and twenty backends being scheduled took 231 ms at load 15 (against a
// bound of 200 ms then), and the times are logged. The windows before the
// deadline are wide for the same reason: the child process has 2 s to
// start its statements, and they must still run 2 s before the deadline,
// at least a second after the kill, when the server says it looked before
// its timeout could fire (a query asked for then was once answered only
// after the deadline).
func TestKilledClientServerStillStops(t *testing.T) {
	mon := monitor(t)
	const n = 20
	const gracePeriod = 5 * time.Second // gone by then after the deadline
	app := appName(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+app, childCalls+"="+strconv.Itoa(n))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	child := bufio.NewReader(out)
	if line, _ := child.ReadString('\n'); line != "ready\n" {
		t.Fatalf("child said %q, want ready", line)
	}
	deadline := time.Now().Add(5 * time.Second)
	if _, err := fmt.Fprintln(in, deadline.UnixNano()); err != nil {
		t.Fatal(err)
	}
	if line, _ := child.ReadString('\n'); line != "started\n" {
		t.Fatalf("child said %q, want started", line)
	}
	for activeSleeps(t, mon, app) < n {
		if time.Until(deadline) < 3*time.Second {
			t.Fatalf("only %d of %d statements running 3s before the deadline", activeSleeps(t, mon, app), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	t.Logf("client killed %v before the deadline", time.Until(deadline))

	// The server-side timeout is the deadline less the 10 ms reserve: seen
	// by the server before then, the statements must all still run, or the
	// kill is what stopped them.
	time.Sleep(time.Until(deadline.Add(-2 * time.Second)))
	if got, at := sleepsAt(t, mon, app); at.After(deadline.Add(-10 * time.Millisecond)) {
		t.Logf("the server looked at its sessions only %v before the deadline, too late to tell whether the kill stopped them", deadline.Sub(at))
	} else if got != n {
		t.Errorf("%d of %d statements still running %v before the deadline, want all: the kill must not be what stops them",
			got, n, deadline.Sub(at).Round(time.Millisecond))
	}
	var first, gone time.Time
	for limit := deadline.Add(gracePeriod); time.Now().Before(limit); time.Sleep(2 * time.Millisecond) {
		left := activeSleeps(t, mon, app)
		if left < n && first.IsZero() {
			first = time.Now()
		}
		if left == 0 {
			gone = time.Now()
			break
		}
	}
	if gone.IsZero() {
		t.Fatalf("%d statements of a dead client still running %v after its deadline: the server did not stop them",
			activeSleeps(t, mon, app), gracePeriod)
	}
	t.Logf("statements of the dead client: first gone %v after the deadline, all gone %v after it",
		first.Sub(deadline), gone.Sub(deadline))
}

// sleepsAt is activeSleeps with the server's clock read after it looked.
func sleepsAt(t *testing.T, mon *pgx.Conn, app string) (int, time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serverWait)
	defer cancel()
	var n int
	var at time.Time
	err := mon.QueryRow(ctx, `SELECT count(*) FILTER (WHERE application_name = $1 AND state = 'active'
		AND wait_event = 'PgSleep'), clock_timestamp() FROM pg_stat_activity`, app).Scan(&n, &at)
	if err != nil {
		t.Fatalf("pg_stat_activity: %v", err)
	}
	return n, at
}
