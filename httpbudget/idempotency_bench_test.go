package httpbudget_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/idempotency"
	"github.com/timebudget/budget/wire"
)

// answering is a handler that reads a small body and answers 200 with a
// short one, the cost Idempotent is measured beside.
var answering = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"ch_1","status":"succeeded"}`)
})

// idemBench serves one POST through h per call; key returns the key of the
// call (none when ""), body is re-read each time.
type idemBench struct {
	req  *http.Request
	body *strings.Reader
	w    *nopWriter
}

func newIdemBench() *idemBench {
	b := &idemBench{body: strings.NewReader(`{"amount":500,"currency":"eur"}`), w: &nopWriter{h: http.Header{}}}
	b.req = httptest.NewRequest(http.MethodPost, "/charges", b.body)
	return b
}

func (b *idemBench) serve(h http.Handler, key []string) {
	b.body.Seek(0, io.SeekStart)
	b.req.Body = io.NopCloser(b.body)
	if key != nil {
		b.req.Header[wire.HeaderIdempotencyKey] = key
	} else {
		delete(b.req.Header, wire.HeaderIdempotencyKey)
	}
	clear(b.w.h)
	h.ServeHTTP(b.w, b.req)
}

// BenchmarkIdempotent puts the middleware's cost per request beside the
// handler alone: a request without a key, a first request (a new key each
// time: fingerprint, reserve, record, complete), and a replay.
func BenchmarkIdempotent(b *testing.B) {
	b.Run("handler alone", func(b *testing.B) {
		ib := newIdemBench()
		b.ReportAllocs()
		for b.Loop() {
			ib.serve(answering, nil)
		}
	})
	b.Run("no key", func(b *testing.B) {
		ib, h := newIdemBench(), httpbudget.Idempotent(&idempotency.MemoryStore{}, answering)
		b.ReportAllocs()
		for b.Loop() {
			ib.serve(h, nil)
		}
	})
	b.Run("first", func(b *testing.B) {
		ib, h := newIdemBench(), httpbudget.Idempotent(&idempotency.MemoryStore{}, answering)
		keys := make([][]string, 1<<16)
		for i := range keys {
			keys[i] = []string{"key-" + strconv.Itoa(i)}
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			ib.serve(h, keys[i%len(keys)])
			i++
		}
	})
	b.Run("replay", func(b *testing.B) {
		ib, h := newIdemBench(), httpbudget.Idempotent(&idempotency.MemoryStore{}, answering)
		key := []string{"key-1"}
		ib.serve(h, key)
		b.ReportAllocs()
		for b.Loop() {
			ib.serve(h, key)
		}
	})
}

// TestIdempotentAllocations pins what the middleware allocates beyond the
// handler alone. A request without a key: nothing. A first request: the
// body's copy and its reader, the SHA-256 state, the recorder, its copy of
// the body and of the headers, the detached context, the store's entry and
// the record: 15 measured. A replay: the body's copy and its reader, the
// SHA-256 state, the Content-Length and replay marker: 7 measured.
func TestIdempotentAllocations(t *testing.T) {
	ib := newIdemBench()
	allocs := func(h http.Handler, key func(int) []string) float64 {
		i := 0
		return testing.AllocsPerRun(500, func() { ib.serve(h, key(i)); i++ })
	}
	none := func(int) []string { return nil }
	base := allocs(answering, none)
	h := httpbudget.Idempotent(&idempotency.MemoryStore{}, answering)
	if got := allocs(h, none) - base; got > 0 {
		t.Errorf("a request without a key: %v allocations more, want 0", got)
	}
	keys := make([][]string, 1000)
	for i := range keys {
		keys[i] = []string{"key-" + strconv.Itoa(i)}
	}
	first := allocs(h, func(i int) []string { return keys[i] }) - base
	replay := allocs(h, func(int) []string { return keys[0] }) - base
	t.Logf("first %v, replay %v allocations more than the handler alone", first, replay)
	if first > 15 {
		t.Errorf("a first request: %v allocations more, want at most 15", first)
	}
	if replay > 7 {
		t.Errorf("a replay: %v allocations more, want at most 7", replay)
	}
}
