package pgxbudget_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/pgxbudget"
	"github.com/timebudget/budget/wire"
)

// payment is a handler with a side effect: it counts its runs, waits for
// gate when one is set, and answers 201 naming the run.
type payment struct {
	runs atomic.Int32
	gate chan struct{}
}

func (p *payment) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := p.runs.Add(1)
	body, _ := io.ReadAll(r.Body)
	if p.gate != nil {
		<-p.gate
	}
	w.Header().Set("X-Run", fmt.Sprint(n))
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, "charged %s, run %d", body, n)
}

// pay serves one keyed POST through h within budget (none when 0).
func pay(h http.Handler, key, body string, budget time.Duration) *httptest.ResponseRecorder {
	ctx := context.Background()
	if budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/charges", strings.NewReader(body))
	r.Header.Set(wire.HeaderIdempotencyKey, key)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// httpbudget.Idempotent on the PostgreSQL store, end to end: a finished
// key is replayed, a concurrent duplicate waits or gets 409, a changed
// payload gets 422, an expired key runs again, and a store that is down
// fails closed with 503.
func TestIdempotentHTTPOnPostgres(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 4)
	store := newIdemStore(t, p, pgxbudget.IdempotencyOptions{})

	t.Run("replay", func(t *testing.T) {
		c := &payment{}
		h := httpbudget.Idempotent(store, c)
		first, again := pay(h, "replay", "10", 0), pay(h, "replay", "10", 0)
		if first.Code != http.StatusCreated || again.Code != http.StatusCreated || c.runs.Load() != 1 {
			t.Fatalf("first %d, repeat %d, after %d runs: want 201, 201 after 1", first.Code, again.Code, c.runs.Load())
		}
		if again.Body.String() != first.Body.String() || again.Header().Get("X-Run") != "1" ||
			again.Header().Get(httpbudget.HeaderIdempotentReplayed) != "true" {
			t.Fatalf("the repeat got %q %v, want the first answer %q, marked replayed", again.Body, again.Header(), first.Body)
		}
	})

	t.Run("changed payload", func(t *testing.T) {
		c := &payment{}
		h := httpbudget.Idempotent(store, c)
		pay(h, "changed", "10", 0)
		if w := pay(h, "changed", "99", 0); w.Code != http.StatusUnprocessableEntity || c.runs.Load() != 1 {
			t.Fatalf("the key with another body: %d after %d runs, want 422 after 1", w.Code, c.runs.Load())
		}
	})

	t.Run("concurrent duplicate", func(t *testing.T) {
		c := &payment{gate: make(chan struct{})}
		h := httpbudget.Idempotent(store, c)
		done := make(chan *httptest.ResponseRecorder)
		go func() { done <- pay(h, "dup", "10", 0) }()
		for c.runs.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		// The first still runs: a duplicate whose budget cannot cover the
		// wait gets 409 and runs nothing.
		if w := pay(h, "dup", "10", time.Second); w.Code != http.StatusConflict || w.Header().Get("Retry-After") != "1" {
			t.Fatalf("a duplicate while the first runs, 1 s budget: %d %q, want 409 with Retry-After", w.Code, w.Body)
		}
		// One with time waits for the first and replays its answer.
		waiting := make(chan *httptest.ResponseRecorder)
		go func() { waiting <- pay(h, "dup", "10", 20*time.Second) }()
		time.Sleep(100 * time.Millisecond)
		close(c.gate)
		first, dup := <-done, <-waiting
		if first.Code != http.StatusCreated || dup.Code != http.StatusCreated || dup.Body.String() != first.Body.String() || c.runs.Load() != 1 {
			t.Fatalf("first %d %q, waiting duplicate %d %q, %d runs: want the same 201 after 1 run",
				first.Code, first.Body, dup.Code, dup.Body, c.runs.Load())
		}
	})

	t.Run("expired key", func(t *testing.T) {
		c := &payment{}
		h := httpbudget.Idempotent(newIdemStore(t, p, pgxbudget.IdempotencyOptions{TTL: time.Second}), c)
		pay(h, "expiring", "10", 0)
		time.Sleep(1500 * time.Millisecond) // past the store's TTL of 1 s
		w := pay(h, "expiring", "10", 0)
		if w.Code != http.StatusCreated || c.runs.Load() != 2 || w.Header().Get(httpbudget.HeaderIdempotentReplayed) != "" {
			t.Fatalf("a key past its TTL: %d after %d runs, replayed %q: want a second run",
				w.Code, c.runs.Load(), w.Header().Get(httpbudget.HeaderIdempotentReplayed))
		}
	})

	t.Run("store down", func(t *testing.T) {
		down, _ := newPool(t, 1)
		s, err := pgxbudget.NewIdempotencyStore(down, pgxbudget.IdempotencyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		down.Close()
		c := &payment{}
		w := pay(httpbudget.Idempotent(s, c), "down", "10", 0)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || c.runs.Load() != 0 {
			t.Fatalf("the store down: %d after %d runs, want 503 with Retry-After and no run", w.Code, c.runs.Load())
		}
	})
}

// 200 concurrent retries of one key, through the middleware on the
// PostgreSQL store, run the handler exactly once and all get its answer.
func TestIdempotentHTTPOnPostgresConcurrentRetries(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 4)
	pm := &payment{gate: make(chan struct{})}
	h := httpbudget.Idempotent(newIdemStore(t, p, pgxbudget.IdempotencyOptions{}), pm)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		codes = map[int]int{}
		body  = map[string]int{}
	)
	for range 200 {
		wg.Go(func() {
			w := pay(h, "retry-storm", "10", 60*time.Second)
			mu.Lock()
			defer mu.Unlock()
			codes[w.Code]++
			body[w.Body.String()]++
		})
	}
	time.Sleep(200 * time.Millisecond) // most retries arrive while the first runs
	close(pm.gate)
	wg.Wait()
	if pm.runs.Load() != 1 {
		t.Fatalf("the handler ran %d times for 200 retries of one key, want once", pm.runs.Load())
	}
	if codes[http.StatusCreated] != 200 || len(body) != 1 {
		t.Fatalf("answers by status %v, distinct bodies %d: want 200 × 201, one body", codes, len(body))
	}
}
