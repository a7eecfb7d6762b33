package httpbudget_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
)

// TestTransportLeavesAServerThatIgnoresTheBudget: a server that ignores the
// budget headers and stops only when its connection closes (any third-party
// HTTP API) must learn that its caller left as soon as it would from plain
// net/http with a context deadline. Lingering kept such a server working up
// to DefaultLinger past every deadline. The two clients alternate in the same
// run, and the test asserts the relation of their p99s, with a margin of
// half the linger (lingering adds all of it), not an absolute time; it logs
// the figures BENCHMARKS.md quotes.
func TestTransportLeavesAServerThatIgnoresTheBudget(t *testing.T) {
	t.Parallel()
	const n = 100
	const timeout = 20 * time.Millisecond
	var mu sync.Mutex
	arrived, ended := map[string]bool{}, map[string]time.Time{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived[r.URL.RawQuery] = true
		mu.Unlock()
		<-r.Context().Done() // works until the connection closes
		mu.Lock()
		ended[r.URL.RawQuery] = time.Now()
		mu.Unlock()
	}))
	t.Cleanup(s.Close)
	plainBase := s.Client().Transport.(*http.Transport).Clone()
	t.Cleanup(plainBase.CloseIdleConnections)
	plain := &http.Client{Transport: plainBase}
	base := s.Client().Transport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	withBudget := &http.Client{Transport: httpbudget.NewTransport(base)}

	// after sends one request and returns how long the server worked past
	// the caller's deadline, and false if the request never reached it (on
	// a busy machine, a dial can take longer than the deadline).
	after := func(c *http.Client, ctx context.Context, id string) (time.Duration, bool) {
		deadline, _ := ctx.Deadline()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/?"+id, nil)
		if resp, err := c.Do(req); err == nil {
			_ = resp.Body.Close()
			t.Fatalf("got %d, want the deadline's error", resp.StatusCode)
		}
		for i := range 5000 {
			mu.Lock()
			at, ok := ended[id]
			came := arrived[id]
			mu.Unlock()
			switch {
			case ok:
				return max(at.Sub(deadline), 0), true
			case !came && i >= 1000:
				return 0, false
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatalf("request %s: the server still works 5 s after the deadline", id)
		return 0, false
	}
	// The first expiry toward a host lingers as its probe, to find out
	// whether the host answers late; it does not, so the next probe is
	// due in 20 s, after the test.
	ctx, cancel := budget.Start(context.Background(), timeout)
	after(withBudget, ctx, "probe")
	cancel()
	var ours, theirs []time.Duration
	for i := range n {
		ctx, cancel = context.WithTimeout(context.Background(), timeout)
		if d, ok := after(plain, ctx, "plain"+strconv.Itoa(i)); ok {
			theirs = append(theirs, d)
		}
		cancel()
		ctx, cancel = budget.Start(context.Background(), timeout)
		if d, ok := after(withBudget, ctx, "budget"+strconv.Itoa(i)); ok {
			ours = append(ours, d)
		}
		cancel()
	}
	if len(ours) < n*9/10 || len(theirs) < n*9/10 {
		t.Fatalf("too few requests reached the server in time: %d and %d of %d", len(ours), len(theirs), n)
	}
	op50, op90, op99 := quantiles(ours)
	tp50, _, tp99 := quantiles(theirs)
	t.Logf("server's work after the caller's deadline, %d requests each, %v deadlines: NewTransport p50 %v p90 %v p99 %v; net/http p50 %v p99 %v",
		len(ours), timeout, op50, op90, op99, tp50, tp99)
	// A transport that lingered toward this host would keep the server
	// working for the linger on most requests, so its p90 would pass the
	// limit; the p99 of a hundred requests is two requests, which a busy
	// machine's scheduling alone can delay by hundreds of milliseconds.
	if limit := 2*tp99 + httpbudget.DefaultLinger/2; op90 > limit {
		t.Errorf("with NewTransport the server works %v past the deadline (p90), with net/http %v (p99): want at most %v", op90, tp99, limit)
	}
}

// quantiles returns the p50 and p99 of d by nearest rank.
func quantiles(d []time.Duration) (p50, p90, p99 time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	rank := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return rank(0.50), rank(0.90), rank(0.99)
}
