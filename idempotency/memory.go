package idempotency

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Defaults of a zero [MemoryStore].
const (
	defaultTTL      = 24 * time.Hour
	defaultMaxKeys  = 10_000
	defaultMaxBytes = 64 << 20
)

// MemoryStore is an [Store] in this process's memory,
// bounded in keys, in bytes of answers and in time. The zero value is ready
// to use: keys live 24 hours, at most 10,000 of them and 64 MiB of answers.
// When a bound is reached, the oldest keys whose answers are done are
// dropped first; a store whose oldest key still runs refuses new keys with
// [ErrStoreFull]. It is safe for concurrent use; one lock guards
// it, held for a map operation at a time. It serves one process: replicas
// behind a balancer need a shared store. A nil *MemoryStore answers every
// call with an error.
type MemoryStore struct {
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

// errNilMemoryStore is what a nil *MemoryStore answers, rather than panic in
// the middle of a request: a middleware fails closed on it.
var errNilMemoryStore = errors.New("idempotency: a nil *MemoryStore: use &idempotency.MemoryStore{} (its zero value is ready)")

type memEntry struct {
	key     string
	expires time.Time
	rec     Record
	size    int
}

// Reserve implements [Store].
func (s *MemoryStore) Reserve(_ context.Context, key string, fp [32]byte) (Record, bool, error) {
	if s == nil {
		return Record{}, false, errNilMemoryStore
	}
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
		return Record{}, false, ErrStoreFull
	}
	if s.m == nil {
		s.m = make(map[string]*memEntry)
	}
	e := &memEntry{key: key, expires: now.Add(orDuration(s.TTL, defaultTTL)), rec: Record{Fingerprint: fp}}
	s.m[key] = e
	s.order = append(s.order, e)
	return Record{}, true, nil
}

// Complete implements [Store]. Completing a key that expired or
// was dropped meanwhile does nothing. The store keeps rec's Header and Body
// as they are, not copies: the caller must not change them afterwards.
func (s *MemoryStore) Complete(_ context.Context, key string, rec *Record) error {
	if s == nil {
		return errNilMemoryStore
	}
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
	s.bytes -= e.size // a key completed twice counts its last answer only
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

// Get implements [Store]. The record's Header and Body are the store's:
// the caller must not change them.
func (s *MemoryStore) Get(_ context.Context, key string) (Record, bool, error) {
	if s == nil {
		return Record{}, false, errNilMemoryStore
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[key]; ok && time.Now().Before(e.expires) {
		return e.rec, true, nil
	}
	return Record{}, false, nil
}

// evict drops expired keys, then the oldest done keys while the store is
// over its bounds with room keys to add. It stops at the oldest key that
// still runs.
func (s *MemoryStore) evict(now time.Time, room int) {
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
func (s *MemoryStore) drop(e *memEntry) {
	delete(s.m, e.key)
	s.bytes -= e.size
}

func orInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

func orDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
