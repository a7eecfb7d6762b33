package httpbudget

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/timebudget/budget/idempotency"
	"github.com/timebudget/budget/wire"
)

// MaxIdempotentAnswer bounds the body of an answer [Idempotent] keeps to
// replay, and the body of a keyed request it reads to fingerprint: 1 MiB,
// [idempotency.MaxAnswer].
const MaxIdempotentAnswer = idempotency.MaxAnswer

// HeaderIdempotentReplayed is set to "true" on an answer [Idempotent]
// replays, so that a caller (and whoever reads its logs) can tell a
// repeated request from a first one.
const HeaderIdempotentReplayed = "Idempotent-Replayed"

// Idempotent returns a handler that runs next at most once per idempotency
// key: a request carrying an Idempotency-Key header it has seen before gets
// the first request's answer again (status, headers and body, with
// Idempotent-Replayed: true) instead of running next. Requests without the
// header run next unchanged, at the cost of one header lookup.
//
// The key is bound to the request: its method, path and query, and body
// (SHA-256). A repeat of the key with another request is refused with 422
// Unprocessable Entity, never answered with the first's answer. A repeat
// that arrives while the first still runs waits for it and replays its
// answer, within its own budget (its context's deadline, less a moment to
// answer; 10 s when it has none); when its budget cannot cover the wait it
// gets 409 Conflict with Retry-After: 1 and next does not run. That 409 is
// sent even when the budget ran out during the wait (not when the caller
// left): it tells the caller to try again, where the 504 with
// Budget-Expired [NewHandler] answers for a silent handler tells it to stop. A malformed
// key (empty, over 255 bytes, control characters, several values: see
// [wire.ParseIdempotencyKey]) is refused with 400 naming what was wrong, and
// a keyed request body over [MaxIdempotentAnswer] with 413.
//
// The store fails closed: when it cannot reserve or read a key (an error,
// or [idempotency.ErrStoreFull]), the request gets 503 Service Unavailable
// with Retry-After: 1 and next does not run, since running it could repeat
// work the store would have stopped. A read made while waiting that fails
// for want of the repeat's budget (an error matching
// context.DeadlineExceeded or [budget.ErrInsufficient], as a database store
// that pushes the budget down returns) is the budget running out: 409, as
// above. An answer too large to keep (over
// [MaxIdempotentAnswer]) or sent over a hijacked connection is not
// replayed: repeats get 409. When next panics, the key is forgotten, so
// that a repeat runs next again, and the panic goes on. When the store
// cannot complete a key, the key stays running until the store expires it:
// repeats get 409 until then, never a second run.
//
// Put Idempotent inside [NewHandler], so that a repeat's wait is bounded by
// its budget. It panics if store or next is nil, as http.Handle does.
// Idempotent is safe for concurrent use when store is. A first request
// costs a SHA-256 of its body, the body's copy, the recording of its answer
// and two store calls; see BenchmarkIdempotent.
func Idempotent(store idempotency.Store, next http.Handler) http.Handler {
	if store == nil || next == nil {
		panic("httpbudget: Idempotent with a nil store or handler")
	}
	return &idempotent{store: store, next: next}
}

type idempotent struct {
	store idempotency.Store
	next  http.Handler
}

func (h *idempotent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	vals := r.Header[wire.HeaderIdempotencyKey]
	if len(vals) == 0 {
		h.next.ServeHTTP(w, r)
		return
	}
	key, _, err := wire.ParseIdempotencyKey(vals)
	if err != nil {
		plain(w, http.StatusBadRequest, err.Error())
		return
	}
	fp, ok := fingerprint(w, r)
	if !ok {
		return
	}
	rec, res, err := idempotency.Once(r.Context(), h.store, key, fp, idempotency.MaxWait, func(context.Context) idempotency.Record {
		return h.first(w, r)
	})
	switch res {
	case idempotency.Ran:
	case idempotency.Replayed:
		replay(w, rec)
	case idempotency.Mismatch:
		plain(w, http.StatusUnprocessableEntity, "httpbudget: Idempotency-Key reused with another request (method, path or body)")
	case idempotency.Busy:
		// Answered even when the budget has just run out (but not when the
		// caller left): a 409 tells the caller to try again, where the 504
		// NewHandler would answer for silence tells it to stop.
		if !errors.Is(r.Context().Err(), context.Canceled) {
			w.Header().Set("Retry-After", "1")
			plain(w, http.StatusConflict, "httpbudget: a request with this Idempotency-Key is still running, or failed: try again")
		}
	case idempotency.NotReplayable:
		plain(w, http.StatusConflict, "httpbudget: the first answer for this Idempotency-Key was too large to replay")
	default:
		storeDown(w, err)
	}
}

// fingerprint reads r's body (bounded), puts it back for the handler, and
// returns the SHA-256 of the method, path and query, and body. It answers
// 413 or 400 itself when the body is too large or cannot be read.
func fingerprint(w http.ResponseWriter, r *http.Request) ([32]byte, bool) {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(r.Body, MaxIdempotentAnswer+1))
		switch {
		case err != nil:
			plain(w, http.StatusBadRequest, "httpbudget: reading the request body: "+err.Error())
			return [32]byte{}, false
		case len(b) > MaxIdempotentAnswer:
			plain(w, http.StatusRequestEntityTooLarge, "httpbudget: a request with an Idempotency-Key may have a body of at most 1 MiB")
			return [32]byte{}, false
		}
		body = b
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	d := sha256.New()
	_, _ = io.WriteString(d, r.Method)
	d.Write([]byte{0})
	_, _ = io.WriteString(d, r.URL.RequestURI())
	d.Write([]byte{0})
	d.Write(body)
	var fp [32]byte
	d.Sum(fp[:0])
	return fp, true
}

// first runs next for the request that reserved its key, and returns the
// record of its answer.
func (h *idempotent) first(w http.ResponseWriter, r *http.Request) idempotency.Record {
	rw := &recorder{ResponseWriter: w}
	h.next.ServeHTTP(rw, r)
	rec := idempotency.Record{Replayable: !rw.over && !rw.hijacked, Status: rw.code, Header: rw.header}
	if rec.Status == 0 {
		rec.Status = http.StatusOK
	}
	if rec.Header == nil {
		rec.Header = w.Header().Clone()
	}
	if rec.Replayable {
		rec.Body = rw.body.Bytes()
	}
	return rec
}

// replay sends rec, the answer of a key's first request, again.
func replay(w http.ResponseWriter, rec idempotency.Record) {
	hdr := w.Header()
	for k, v := range rec.Header {
		hdr[k] = v
	}
	hdr.Set(HeaderIdempotentReplayed, "true")
	hdr.Set("Content-Length", strconv.Itoa(len(rec.Body)))
	w.WriteHeader(rec.Status)
	_, _ = w.Write(rec.Body)
}

// storeDown answers a request whose key the store could not handle.
func storeDown(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", "1")
	msg := "httpbudget: idempotency store unavailable"
	if errors.Is(err, idempotency.ErrStoreFull) {
		msg = err.Error()
	}
	plain(w, http.StatusServiceUnavailable, msg)
}

func plain(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}

// recorder passes an answer through to the client and keeps a copy of it,
// up to MaxIdempotentAnswer bytes of body.
type recorder struct {
	http.ResponseWriter
	code     int
	header   http.Header // a copy, taken when the status went out
	body     bytes.Buffer
	over     bool
	hijacked bool
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 && (code < 100 || code >= 200) {
		r.code = code
		r.header = r.ResponseWriter.Header().Clone()
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.WriteHeader(http.StatusOK)
	}
	if !r.over {
		if r.body.Len()+len(p) > MaxIdempotentAnswer {
			r.over = true
			r.body = bytes.Buffer{}
		} else {
			r.body.Write(p)
		}
	}
	return r.ResponseWriter.Write(p)
}

// Flush flushes, when the underlying writer can.
func (r *recorder) Flush() {
	if r.code == 0 {
		r.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

// Hijack hands the connection over; the answer then cannot be replayed.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.hijacked = true
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
