package httpbudget

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// IdempotencyRecord is what an [IdempotencyStore] keeps for one key: the
// fingerprint of the request that first carried it, and, once its handler
// returned, the answer to replay.
type IdempotencyRecord struct {
	// Fingerprint is the SHA-256 of the first request's method, path and
	// query, and body: a later request with the same key and another
	// fingerprint is refused (422), not answered with another's answer.
	Fingerprint [32]byte
	// Done reports that the handler returned and the answer below is
	// final; false while the first request still runs.
	Done bool
	// Replayable is false when the answer could not be kept whole (larger
	// than [MaxIdempotentAnswer], or the connection was hijacked): a
	// repeat then gets 409 rather than a part of it.
	Replayable bool
	// Status, Header and Body are the answer, when Done and Replayable.
	Status int
	Header http.Header
	Body   []byte
}

// IdempotencyStore keeps the first answer for each idempotency key, for
// [Idempotent]. Implementations must be safe for concurrent use, and across
// replicas when several servers share one; they decide how long a key is
// kept (its time to live), counted from Reserve.
type IdempotencyStore interface {
	// Reserve claims key for a request with fingerprint fp. When the key
	// is unknown (or expired) it records it as running and returns a zero
	// record and true: the caller runs the handler and must call Complete.
	// Otherwise it returns the key's record and false.
	Reserve(ctx context.Context, key string, fp [32]byte) (IdempotencyRecord, bool, error)
	// Complete stores the final record of a key the caller reserved
	// (keeping the fingerprint Reserve was given), or,
	// with a nil rec, forgets the key so that a repeat runs the handler
	// (done when the handler panicked).
	Complete(ctx context.Context, key string, rec *IdempotencyRecord) error
	// Get returns the record of key and true, or false when it is unknown
	// or expired.
	Get(ctx context.Context, key string) (IdempotencyRecord, bool, error)
}

// ErrIdempotencyStoreFull is returned by [MemoryIdempotencyStore.Reserve]
// when the store holds MaxKeys keys whose oldest still runs: it keeps a
// running key rather than drop it, since dropping it would let a repeat run
// the work twice.
var ErrIdempotencyStoreFull = errors.New("httpbudget: idempotency store full")

// Defaults of a zero [MemoryIdempotencyStore].
const (
	defaultIdempotencyTTL = 24 * time.Hour
	defaultMaxKeys        = 10_000
	defaultMaxBytes       = 64 << 20
)

// MemoryIdempotencyStore is an [IdempotencyStore] in this process's memory,
// bounded in keys, in bytes of answers and in time. The zero value is ready
// to use: keys live 24 hours, at most 10,000 of them and 64 MiB of answers.
// When a bound is reached, the oldest keys whose answers are done are
// dropped first; a store whose oldest key still runs refuses new keys with
// [ErrIdempotencyStoreFull]. It is safe for concurrent use; one lock guards
// it, held for a map operation at a time. It serves one process: replicas
// behind a balancer need a shared store.
type MemoryIdempotencyStore struct {
	// TTL is how long a key is kept after it was reserved. Zero means 24 h.
	TTL time.Duration
	// MaxKeys bounds the keys kept. Zero means 10,000.
	MaxKeys int
	// MaxBytes bounds the bytes of the answers kept (bodies and header
	// values). Zero means 64 MiB.
	MaxBytes int

	mu    sync.Mutex
	m     map[string]*memEntry
	order []*memEntry // by reservation, so by expiry: the TTL is one for all
	head  int         // order[:head] is dropped
	bytes int
}

type memEntry struct {
	key     string
	expires time.Time
	rec     IdempotencyRecord
	size    int
}

// Reserve implements [IdempotencyStore].
func (s *MemoryIdempotencyStore) Reserve(_ context.Context, key string, fp [32]byte) (IdempotencyRecord, bool, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[key]; ok {
		if now.Before(e.expires) {
			return e.rec, false, nil
		}
		s.drop(e) // expired: its bytes go with it
	}
	s.evict(now, 1)
	if len(s.m) >= orInt(s.MaxKeys, defaultMaxKeys) {
		return IdempotencyRecord{}, false, ErrIdempotencyStoreFull
	}
	if s.m == nil {
		s.m = make(map[string]*memEntry)
	}
	e := &memEntry{key: key, expires: now.Add(orDefault(s.TTL, defaultIdempotencyTTL)), rec: IdempotencyRecord{Fingerprint: fp}}
	s.m[key] = e
	s.order = append(s.order, e)
	return IdempotencyRecord{}, true, nil
}

// Complete implements [IdempotencyStore]. Completing a key that expired or
// was dropped meanwhile does nothing.
func (s *MemoryIdempotencyStore) Complete(_ context.Context, key string, rec *IdempotencyRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	if !ok {
		return nil
	}
	if rec == nil {
		s.drop(e)
		return nil
	}
	fp := e.rec.Fingerprint // the reservation's: a record cannot change it
	e.rec = *rec
	e.rec.Fingerprint, e.rec.Done = fp, true
	e.size = len(rec.Body)
	for k, vs := range rec.Header {
		e.size += len(k)
		for _, v := range vs {
			e.size += len(v)
		}
	}
	s.bytes += e.size
	s.evict(time.Now(), 0)
	return nil
}

// Get implements [IdempotencyStore].
func (s *MemoryIdempotencyStore) Get(_ context.Context, key string) (IdempotencyRecord, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[key]; ok && time.Now().Before(e.expires) {
		return e.rec, true, nil
	}
	return IdempotencyRecord{}, false, nil
}

// evict drops expired keys, then the oldest done keys while the store is
// over its bounds with room keys to add. It stops at the oldest key that
// still runs.
func (s *MemoryIdempotencyStore) evict(now time.Time, room int) {
	maxKeys, maxBytes := orInt(s.MaxKeys, defaultMaxKeys), orInt(s.MaxBytes, defaultMaxBytes)
	for ; s.head < len(s.order); s.head++ {
		e := s.order[s.head]
		if s.m[e.key] != e { // dropped or replaced: a stale entry
			continue
		}
		over := len(s.m)+room > maxKeys || s.bytes > maxBytes
		if now.Before(e.expires) && (!over || !e.rec.Done) {
			break
		}
		s.drop(e)
	}
	if s.head > len(s.order)/2 || len(s.order) > 2*maxKeys {
		// Compact: keep the live entries, in order, so that the slice
		// stays within twice the keys however many were dropped.
		live := s.order[:0]
		for _, e := range s.order[s.head:] {
			if s.m[e.key] == e {
				live = append(live, e)
			}
		}
		clear(s.order[len(live):])
		s.order, s.head = live, 0
	}
}

// drop forgets e.
func (s *MemoryIdempotencyStore) drop(e *memEntry) {
	delete(s.m, e.key)
	s.bytes -= e.size
}

func orInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}
