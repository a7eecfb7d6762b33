package idempotency_test

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/timebudget/budget/idempotency"
)

// The life of one key in a store: the first request reserves it and runs
// the work; a repeat finds the answer to replay, and a request that reuses
// the key with another payload is told apart by its fingerprint.
func ExampleMemoryStore() {
	var store idempotency.MemoryStore // the zero value: 24 h, 10,000 keys, 64 MiB
	ctx := context.Background()
	charge := sha256.Sum256([]byte("POST /charges amount=10"))

	_, mine, err := store.Reserve(ctx, "key-1", charge)
	fmt.Println("first request runs the work:", mine, err)
	_ = store.Complete(ctx, "key-1", &idempotency.Record{Replayable: true, Status: 201, Body: []byte("charged 10")})

	rec, mine, _ := store.Reserve(ctx, "key-1", charge)
	fmt.Printf("repeat runs it: %v; replays %d %q\n", mine, rec.Status, rec.Body)

	other := sha256.Sum256([]byte("POST /charges amount=99"))
	rec, _, _ = store.Reserve(ctx, "key-1", other)
	fmt.Println("same key, another payload:", rec.Fingerprint == other)
	// Output:
	// first request runs the work: true <nil>
	// repeat runs it: false; replays 201 "charged 10"
	// same key, another payload: false
}
