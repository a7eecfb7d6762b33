package idempotency_test

import (
	"context"
	"testing"

	"github.com/timebudget/budget/idempotency"
)

// TestZeroValues: a zero MemoryStore works with empty keys and a nil
// record, and a nil *MemoryStore answers every call with an error naming
// what is wrong instead of panicking in the middle of a request.
func TestZeroValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var zero idempotency.MemoryStore
	if _, mine, err := zero.Reserve(ctx, "", [32]byte{}); !mine || err != nil {
		t.Fatalf("zero store, empty key: %v %v", mine, err)
	}
	if err := zero.Complete(ctx, "", nil); err != nil {
		t.Fatal(err)
	}
	if err := zero.Complete(ctx, "never reserved", &idempotency.Record{}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := zero.Get(ctx, "never reserved"); ok || err != nil {
		t.Fatalf("an unknown key: %v %v", ok, err)
	}
	var none *idempotency.MemoryStore
	if _, mine, err := none.Reserve(ctx, "k", [32]byte{}); mine || err == nil {
		t.Fatal("a nil store reserved a key")
	}
	if err := none.Complete(ctx, "k", nil); err == nil {
		t.Fatal("a nil store completed a key")
	}
	if _, ok, err := none.Get(ctx, "k"); ok || err == nil {
		t.Fatal("a nil store found a key")
	}
}
