package pgxbudget_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/timebudget/budget"
)

// countingConn counts the writes to the server: pgx flushes what it sends
// once per round trip, so the writes a statement makes are its round trips.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestOneRoundTrip counts, on the wire, the round trips each statement
// makes once its statements are prepared: the budget's settings travel with
// the statement, so pgxbudget makes exactly as many as plain pgx, one. This
// is the deterministic check behind the overhead figures, which only time
// it.
func TestOneRoundTrip(t *testing.T) {
	var writes atomic.Int64
	cfg := poolConfig(t, 1, appName(t))
	dialer := &net.Dialer{}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, writes: &writes}, nil
	}
	p := newPoolFrom(t, cfg)
	plain := p.Pool()
	// Open the pool's connection first, without a budget of the cases':
	// on a loaded machine a new connection took over a second, and the
	// test counts round trips, not time.
	warm, cancelWarm := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelWarm()
	if err := plain.Ping(warm); err != nil {
		t.Fatal(err)
	}
	var x int
	cases := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"plain pgx QueryRow", func(ctx context.Context) error { return plain.QueryRow(ctx, "SELECT $1::int", 1).Scan(&x) }},
		{"QueryRow", func(ctx context.Context) error { return p.QueryRow(ctx, "SELECT $1::int", 1).Scan(&x) }},
		{"Query", func(ctx context.Context) error {
			rows, err := p.Query(ctx, "SELECT generate_series(1, $1::int)", 3)
			if err != nil {
				return err
			}
			rows.Close()
			return rows.Err()
		}},
		{"Exec", func(ctx context.Context) error { _, err := p.Exec(ctx, "SELECT pg_sleep($1)", 0); return err }},
		{"SendBatch", func(ctx context.Context) error {
			b := &pgx.Batch{}
			b.Queue("SELECT $1::int", 1)
			b.Queue("SELECT $1::int", 2)
			return p.SendBatch(ctx, b).Close()
		}},
	}
	for _, tc := range cases {
		for i := range 3 { // the first use prepares; count the third
			ctx, cancel := budget.Start(context.Background(), 10*time.Second)
			before := writes.Load()
			err := tc.run(ctx)
			n := writes.Load() - before
			cancel()
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if i == 2 && n != 1 {
				t.Errorf("%s: %d round trips once prepared, want 1", tc.name, n)
			}
		}
	}
}
