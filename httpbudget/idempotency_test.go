package httpbudget_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/idempotency"
	"github.com/timebudget/budget/wire"
)

// charge is a handler with a side effect: it counts its runs and answers
// 201 with the run's number, after work of the given length.
type charge struct {
	runs atomic.Int32
	work time.Duration
}

func (c *charge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := c.runs.Add(1)
	body, _ := io.ReadAll(r.Body)
	if c.work > 0 {
		time.Sleep(c.work)
	}
	w.Header().Set("X-Run", strconv.Itoa(int(n)))
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, "charged %s, run %d", body, n)
}

// call serves one request with key (none when "") and body through h.
func call(ctx context.Context, h http.Handler, key, path, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, path, strings.NewReader(body))
	if key != "" {
		r.Header.Set(wire.HeaderIdempotencyKey, key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestIdempotentReplaysAFinishedKey(t *testing.T) {
	t.Parallel()
	c := &charge{}
	h := httpbudget.Idempotent(&idempotency.MemoryStore{}, c)
	first := call(context.Background(), h, `"k1"`, "/pay?x=1", "5 EUR")
	again := call(context.Background(), h, "k1", "/pay?x=1", "5 EUR") // bare and quoted are one key
	if c.runs.Load() != 1 {
		t.Fatalf("the handler ran %d times", c.runs.Load())
	}
	if again.Code != http.StatusCreated || again.Body.String() != "charged 5 EUR, run 1" ||
		again.Header().Get("X-Run") != "1" || again.Header().Get(httpbudget.HeaderIdempotentReplayed) != "true" {
		t.Fatalf("replay: %d %q %v", again.Code, again.Body, again.Header())
	}
	if first.Header().Get(httpbudget.HeaderIdempotentReplayed) != "" {
		t.Fatal("the first answer is marked replayed")
	}
	// Without a key, every request runs.
	call(context.Background(), h, "", "/pay", "5 EUR")
	if c.runs.Load() != 2 {
		t.Fatalf("a request without a key did not run")
	}
}

func TestIdempotentRefusesAChangedRequest(t *testing.T) {
	t.Parallel()
	c := &charge{}
	h := httpbudget.Idempotent(&idempotency.MemoryStore{}, c)
	call(context.Background(), h, "k", "/pay", "5 EUR")
	for _, tc := range []struct{ path, body string }{{"/pay", "500 EUR"}, {"/refund", "5 EUR"}, {"/pay?x=1", "5 EUR"}} {
		w := call(context.Background(), h, "k", tc.path, tc.body)
		if w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "another request") {
			t.Errorf("%s %q: %d %q, want 422", tc.path, tc.body, w.Code, w.Body)
		}
	}
	if c.runs.Load() != 1 {
		t.Fatalf("the handler ran %d times", c.runs.Load())
	}
}

// A repeat that arrives while the first runs waits for it within its
// budget and replays its answer; one whose budget ends first gets 409.
func TestIdempotentConcurrentDuplicate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := &charge{work: 100 * time.Millisecond}
		h := httpbudget.Idempotent(&idempotency.MemoryStore{}, c)
		var first *httptest.ResponseRecorder
		go func() { first = call(context.Background(), h, "k", "/pay", "5") }()
		time.Sleep(10 * time.Millisecond)
		short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if w := call(short, h, "k", "/pay", "5"); w.Code != http.StatusConflict || w.Header().Get("Retry-After") != "1" {
			t.Fatalf("a repeat without time to wait: %d %q", w.Code, w.Body)
		}
		long, cancel2 := context.WithTimeout(context.Background(), time.Second)
		defer cancel2()
		start := time.Now()
		w := call(long, h, "k", "/pay", "5")
		if w.Code != http.StatusCreated || w.Body.String() != "charged 5, run 1" {
			t.Fatalf("a repeat with time to wait: %d %q", w.Code, w.Body)
		}
		if waited := time.Since(start); waited > 100*time.Millisecond {
			t.Fatalf("the repeat waited %v for a first request due at 100 ms", waited)
		}
		synctest.Wait()
		if c.runs.Load() != 1 || first.Code != http.StatusCreated {
			t.Fatalf("%d runs, first answered %d", c.runs.Load(), first.Code)
		}
	})
}

func TestIdempotentExpiredKeyRunsAgain(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := &charge{}
		h := httpbudget.Idempotent(&idempotency.MemoryStore{TTL: time.Minute}, c)
		call(context.Background(), h, "k", "/pay", "5")
		time.Sleep(59 * time.Second)
		call(context.Background(), h, "k", "/pay", "5")
		if c.runs.Load() != 1 {
			t.Fatalf("a key within its TTL ran again")
		}
		time.Sleep(2 * time.Second)
		if w := call(context.Background(), h, "k", "/pay", "5"); w.Body.String() != "charged 5, run 2" {
			t.Fatalf("after the TTL: %d %q, want a second run", w.Code, w.Body)
		}
	})
}

// failingStore is a store that is down.
type failingStore struct {
	idempotency.MemoryStore
}

func (*failingStore) Reserve(context.Context, string, [32]byte) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, errors.New("connection refused")
}

// A store that is down fails closed: 503 with Retry-After, and the handler
// does not run, since running it could repeat work.
func TestIdempotentStoreDownFailsClosed(t *testing.T) {
	t.Parallel()
	c := &charge{}
	h := httpbudget.Idempotent(&failingStore{}, c)
	w := call(context.Background(), h, "k", "/pay", "5")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" ||
		strings.Contains(w.Body.String(), "connection refused") {
		t.Fatalf("%d %q %v, want 503 that does not show the store's error", w.Code, w.Body, w.Header())
	}
	if c.runs.Load() != 0 {
		t.Fatal("the handler ran without the store")
	}
	if w := call(context.Background(), h, "", "/pay", "5"); w.Code != http.StatusCreated {
		t.Fatalf("a request without a key depends on the store: %d", w.Code)
	}
}

// 200 retries of one key at once run the handler exactly once, and every
// one of them gets its answer.
func TestIdempotent200ConcurrentRetries(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := &charge{work: 20 * time.Millisecond}
		h := httpbudget.Idempotent(&idempotency.MemoryStore{}, c)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		answers := make([]*httptest.ResponseRecorder, 200)
		for i := range answers {
			wg.Go(func() { answers[i] = call(ctx, h, "k", "/pay", "5") })
		}
		wg.Wait()
		if c.runs.Load() != 1 {
			t.Fatalf("the handler ran %d times", c.runs.Load())
		}
		for i, w := range answers {
			if w.Code != http.StatusCreated || w.Body.String() != "charged 5, run 1" {
				t.Fatalf("retry %d: %d %q", i, w.Code, w.Body)
			}
		}
	})
}

func TestIdempotentRefusesHostileKeys(t *testing.T) {
	t.Parallel()
	c := &charge{}
	h := httpbudget.Idempotent(&idempotency.MemoryStore{}, c)
	for name, vals := range map[string][]string{
		"empty":       {""},
		"10 KB":       {strings.Repeat("k", 10<<10)},
		"control":     {"k\x01"},
		"two values":  {"a", "b"},
		"joined list": {"a,b"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/pay", strings.NewReader("5"))
		r.Header[wire.HeaderIdempotencyKey] = vals
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "Idempotency-Key") || len(w.Body.String()) > 200 {
			t.Errorf("%s: %d %q, want a short 400 naming the header", name, w.Code, w.Body)
		}
	}
	if c.runs.Load() != 0 {
		t.Fatal("the handler ran for a hostile key")
	}
	big := call(context.Background(), h, "k", "/pay", strings.Repeat("x", httpbudget.MaxIdempotentAnswer+1))
	if big.Code != http.StatusRequestEntityTooLarge || c.runs.Load() != 0 {
		t.Fatalf("a keyed body over the bound: %d", big.Code)
	}
}

// A handler that panics leaves its key free, so that a repeat runs it.
func TestIdempotentPanicForgetsTheKey(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	h := httpbudget.Idempotent(&idempotency.MemoryStore{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			panic(http.ErrAbortHandler)
		}
		_, _ = io.WriteString(w, "ok")
	}))
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on")
			}
		}()
		call(context.Background(), h, "k", "/", "")
	}()
	if w := call(context.Background(), h, "k", "/", ""); w.Body.String() != "ok" || runs.Load() != 2 {
		t.Fatalf("after a panic: %q, %d runs", w.Body, runs.Load())
	}
}

// An answer too large to keep is not replayed in part: repeats get 409.
func TestIdempotentAnswerTooLargeIsNotReplayed(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	h := httpbudget.Idempotent(&idempotency.MemoryStore{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		_, _ = w.Write(make([]byte, httpbudget.MaxIdempotentAnswer))
		_, _ = w.Write([]byte("!"))
	}))
	if w := call(context.Background(), h, "k", "/", ""); w.Body.Len() != httpbudget.MaxIdempotentAnswer+1 {
		t.Fatalf("the first answer was cut: %d bytes", w.Body.Len())
	}
	if w := call(context.Background(), h, "k", "/", ""); w.Code != http.StatusConflict || runs.Load() != 1 {
		t.Fatalf("repeat: %d after %d runs, want 409 after 1", w.Code, runs.Load())
	}
}

// getFailingStore reserves, then cannot be read.
type getFailingStore struct {
	idempotency.MemoryStore
}

func (*getFailingStore) Get(context.Context, string) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, errors.New("timeout")
}

// A repeat waiting for the first fails closed when the store cannot be
// read: 503, and the handler runs once.
func TestIdempotentStoreDownWhileWaiting(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := &charge{work: 100 * time.Millisecond}
		h := httpbudget.Idempotent(&getFailingStore{}, c)
		go call(context.Background(), h, "k", "/pay", "5")
		time.Sleep(time.Millisecond)
		if w := call(context.Background(), h, "k", "/pay", "5"); w.Code != http.StatusServiceUnavailable {
			t.Errorf("%d %q, want 503", w.Code, w.Body)
		}
		time.Sleep(time.Second) // the first request ends
		synctest.Wait()
		if c.runs.Load() != 1 {
			t.Fatalf("%d runs", c.runs.Load())
		}
	})
}

// One handler, run once per key: a retry of a charge gets the first
// answer, marked as replayed.
func ExampleIdempotent() {
	var runs int
	pay := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		fmt.Fprintf(w, "charged (run %d)", runs)
	})
	h := httpbudget.NewHandler(httpbudget.Idempotent(&idempotency.MemoryStore{}, pay))

	for range 2 {
		r := httptest.NewRequest(http.MethodPost, "/pay", strings.NewReader("amount=5"))
		r.Header.Set("Idempotency-Key", `"order-42"`)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%d %s replayed=%q\n", w.Code, w.Body, w.Header().Get("Idempotent-Replayed"))
	}
	// Output:
	// 200 charged (run 1) replayed=""
	// 200 charged (run 1) replayed="true"
}

// slowGetStore answers Get after 20 ms, as a store across the network may.
type slowGetStore struct {
	idempotency.MemoryStore
}

func (s *slowGetStore) Get(ctx context.Context, key string) (idempotency.Record, bool, error) {
	time.Sleep(20 * time.Millisecond)
	return s.MemoryStore.Get(ctx, key)
}

// A repeat whose budget runs out while it waits for the first request gets
// 409 (try again), not the 504 with Budget-Expired that NewHandler answers
// for a handler that sent nothing, which a client never retries. Before,
// a wait that overran the budget by a store call answered nothing.
func TestIdempotentRepeatOutOfBudgetGets409(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := &charge{work: time.Second}
		h := httpbudget.NewHandler(httpbudget.Idempotent(&slowGetStore{}, c))
		go call(context.Background(), h, "k", "/pay", "5")
		time.Sleep(time.Millisecond)
		r := httptest.NewRequest(http.MethodPost, "/pay", strings.NewReader("5"))
		r.Header.Set(wire.HeaderIdempotencyKey, "k")
		r.Header.Set(wire.HeaderRequestTimeout, "50")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusConflict || w.Header().Get(wire.HeaderBudgetExpired) != "" {
			t.Errorf("%d %v %q, want 409 without Budget-Expired", w.Code, w.Header(), w.Body)
		}
		time.Sleep(2 * time.Second) // the first request ends
		synctest.Wait()
		if c.runs.Load() != 1 {
			t.Fatalf("%d runs", c.runs.Load())
		}
	})
}

// budgetGetStore is a store that pushes the caller's budget down, as a
// database store does: a Get with under 30 ms left is refused with an
// error matching budget.ErrInsufficient.
type budgetGetStore struct {
	idempotency.MemoryStore
}

func (s *budgetGetStore) Get(ctx context.Context, key string) (idempotency.Record, bool, error) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 30*time.Millisecond {
		return idempotency.Record{}, false, fmt.Errorf("store: %w: too little time left for a statement", budget.ErrInsufficient)
	}
	return s.MemoryStore.Get(ctx, key)
}

// A repeat whose read of the store is refused for want of its own budget
// gets 409 (the budget ran out: try again), not 503 (the store is down).
// Before, a store that pushes budgets down turned every repeat whose wait
// outlasted its budget into a 503.
func TestIdempotentRepeatStoreOutOfBudgetGets409(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := &charge{work: time.Second}
		h := httpbudget.Idempotent(&budgetGetStore{}, c)
		go call(context.Background(), h, "k", "/pay", "5")
		time.Sleep(time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		w := call(ctx, h, "k", "/pay", "5")
		if w.Code != http.StatusConflict || w.Header().Get("Retry-After") != "1" {
			t.Errorf("%d %q, want 409 with Retry-After", w.Code, w.Body)
		}
		time.Sleep(2 * time.Second) // the first request ends
		synctest.Wait()
		if c.runs.Load() != 1 {
			t.Fatalf("%d runs", c.runs.Load())
		}
	})
}
