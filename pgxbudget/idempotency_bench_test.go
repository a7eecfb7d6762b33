package pgxbudget_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/pgxbudget"
	"github.com/timebudget/budget/wire"
)

// charging reads a small body and answers a short one: the handler the
// middleware's cost is measured beside (httpbudget's BenchmarkIdempotent
// uses the same, on the memory store).
var charging = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"ch_1","status":"succeeded"}`)
})

// benchKeys numbers the keys of first requests, new across runs of the
// benchmark on one table.
var benchKeys atomic.Int64

type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkIdempotentPostgres puts httpbudget.Idempotent on the PostgreSQL
// store beside the handler alone: a first request (a new key each time:
// fingerprint, one INSERT to reserve, one UPDATE to complete) and a replay
// (one INSERT ... ON CONFLICT that finds the answer). One request at a
// time, over loopback.
func BenchmarkIdempotentPostgres(b *testing.B) {
	p, _ := newPool(b, 2)
	store := newIdemStore(b, p, pgxbudget.IdempotencyOptions{})
	body := strings.NewReader(`{"amount":500,"currency":"eur"}`)
	req := httptest.NewRequest(http.MethodPost, "/charges", body)
	w := &discardWriter{h: http.Header{}}
	serve := func(h http.Handler, key []string) {
		body.Seek(0, io.SeekStart)
		req.Body = io.NopCloser(body)
		if key != nil {
			req.Header[wire.HeaderIdempotencyKey] = key
		}
		clear(w.h)
		h.ServeHTTP(w, req)
	}
	b.Run("handler alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			serve(charging, nil)
		}
	})
	b.Run("one INSERT alone", func(b *testing.B) { // a committed write's round trip, the baseline of the store's statements
		q := `INSERT INTO ` + tableOf(b, store) + ` (key, token, fingerprint, expires_at) VALUES ($1, '', '', now())`
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Pool().Exec(context.Background(), q, "plain-"+strconv.FormatInt(benchKeys.Add(1), 10)); err != nil {
				b.Fatal(err)
			}
		}
	})
	h := httpbudget.Idempotent(store, charging)
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			serve(h, []string{"bench-" + strconv.FormatInt(benchKeys.Add(1), 10)}) // 2 of the allocations
		}
	})
	b.Run("replay", func(b *testing.B) {
		key := []string{"bench-replay"}
		serve(h, key)
		b.ReportAllocs()
		for b.Loop() {
			serve(h, key)
		}
	})
}
