package consttimeout

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/timebudget/budget"
)

const defaultTimeout = 3 * time.Second

func query(q string, timeout time.Duration) error               { return nil }
func queryCtx(ctx context.Context, timeout time.Duration) error { return nil }
func sleepFor(d time.Duration)                                  {}

type store struct{}

func (store) Get(key string, Timeout time.Duration) error { return nil }

func calls(ctx context.Context, s store) {
	_ = query("select 1", 5*time.Second)  // want `constant 5s for the timeout of query although ctx is in scope`
	_ = query("select 1", defaultTimeout) // want `constant 3s for the timeout of query`
	_ = s.Get("k", time.Second)           // want `constant 1s for the Timeout of Get`
}

func client(ctx context.Context) *http.Client {
	return &http.Client{Timeout: 5 * time.Second} // want `constant 5s for http.Client Timeout although ctx is in scope`
}

func clientLater(w http.ResponseWriter, r *http.Request) {
	c := &http.Client{}
	c.Timeout = 2 * time.Second // want `constant 2s for http.Client Timeout although r.Context\(\) is in scope`
	_ = c
}

func dialer(ctx context.Context) net.Conn {
	d := net.Dialer{Timeout: time.Second} // want `constant 1s for net.Dialer Timeout`
	c, _ := d.Dial("tcp", "localhost:1")
	return c
}

// Near misses: none of these is reported.

func noCtx() *http.Client {
	_ = query("select 1", 5*time.Second)
	return &http.Client{Timeout: 5 * time.Second}
}

func fromCtx(ctx context.Context) error {
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, _, _ = budget.Attempt(c, "db", 2*time.Second, 10*time.Millisecond)
	return queryCtx(ctx, 5*time.Second)
}

func variable(ctx context.Context, timeout time.Duration) error {
	sleepFor(time.Second)
	_ = query("select 1", 0)
	return query("select 1", timeout)
}

func shared(ctx context.Context, c *http.Client) {
	c.Timeout = 5 * time.Second
}

func dialCtx(ctx context.Context) (net.Conn, error) {
	d := &net.Dialer{Timeout: time.Second}
	return d.DialContext(ctx, "tcp", "localhost:1")
}
