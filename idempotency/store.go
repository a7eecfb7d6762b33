package idempotency

import (
	"context"
	"errors"
)

// Record is what a [Store] keeps for one key: the fingerprint of the request
// that first carried it, and, once that request's work ended, the answer to
// replay.
type Record struct {
	// Fingerprint is a hash of the first request (for HTTP, the SHA-256 of
	// its method, path and query, and body): a later request with the same
	// key and another fingerprint is refused, never answered with the
	// first one's answer.
	Fingerprint [32]byte
	// Done reports that the work ended and the answer below is final;
	// false while the first request still runs.
	Done bool
	// Replayable is false when the answer could not be kept whole (too
	// large, or the connection was handed over): a repeat is then refused
	// rather than answered with a part of it.
	Replayable bool
	// Status is the protocol's status of the answer: an HTTP status, or a
	// gRPC or Connect code.
	Status int
	// Header holds the answer's headers or metadata. An http.Header
	// converts to and from it.
	Header map[string][]string
	// Body is the answer's body or message, when Done and Replayable.
	Body []byte
}

// Store keeps the first answer for each idempotency key. Implementations
// must be safe for concurrent use, and across replicas when several servers
// share one; they decide how long a key is kept (its time to live), counted
// from Reserve. The package idempotency/storetest tests an implementation
// against this contract.
type Store interface {
	// Reserve claims key for a request with fingerprint fp. When the key
	// is unknown (or expired) it records it as running and returns a zero
	// record and true: the caller runs the work and must call Complete.
	// Otherwise it returns the key's record and false. Of many concurrent
	// calls for one key, exactly one gets true.
	Reserve(ctx context.Context, key string, fp [32]byte) (Record, bool, error)
	// Complete stores the final record of a key the caller reserved
	// (keeping the fingerprint Reserve was given, and marking it done), or,
	// with a nil rec, forgets the key so that a repeat runs the work again
	// (done when the work panicked). Completing a key that expired or was
	// dropped meanwhile does nothing.
	Complete(ctx context.Context, key string, rec *Record) error
	// Get returns the record of key and true, or false when it is unknown
	// or expired.
	Get(ctx context.Context, key string) (Record, bool, error)
}

// ErrStoreFull is returned by [MemoryStore.Reserve] when the store holds
// MaxKeys keys whose oldest still runs: it keeps a running key rather than
// drop it, since dropping it would let a repeat run the work twice.
var ErrStoreFull = errors.New("idempotency: store full: every kept key still runs")
