package idempotency_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget/idempotency"
	"github.com/timebudget/budget/idempotency/storetest"
)

func TestMemoryStoreBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &idempotency.MemoryStore{MaxKeys: 2}
	fp := [32]byte{1}
	reserve := func(key string) error {
		_, mine, err := s.Reserve(ctx, key, fp)
		if err == nil && !mine {
			return errors.New("not reserved")
		}
		return err
	}
	for _, k := range []string{"a", "b"} {
		if err := reserve(k); err != nil {
			t.Fatal(err)
		}
	}
	// Both still run: a third key is refused rather than drop one.
	if err := reserve("c"); !errors.Is(err, idempotency.ErrStoreFull) {
		t.Fatalf("a full store of running keys: %v", err)
	}
	_ = s.Complete(ctx, "a", &idempotency.Record{Status: 200})
	if err := reserve("c"); err != nil {
		t.Fatalf("the oldest done key was not dropped: %v", err)
	}
	if _, ok, _ := s.Get(ctx, "a"); ok {
		t.Fatal("a was kept")
	}
	if rec, ok, _ := s.Get(ctx, "b"); !ok || rec.Done {
		t.Fatal("b, running, was lost")
	}
	// Bytes: a store of 10 bytes keeps one answer of 8.
	sb := &idempotency.MemoryStore{MaxBytes: 10}
	for _, k := range []string{"x", "y"} {
		if _, _, err := sb.Reserve(ctx, k, fp); err != nil {
			t.Fatal(err)
		}
		_ = sb.Complete(ctx, k, &idempotency.Record{Status: 200, Body: []byte("12345678")})
	}
	if _, ok, _ := sb.Get(ctx, "x"); ok {
		t.Fatal("over MaxBytes, the oldest answer was kept")
	}
	if _, ok, _ := sb.Get(ctx, "y"); !ok {
		t.Fatal("the newest answer was dropped")
	}
}

// A key that expired and is reserved again does not count its old answer
// against MaxBytes for ever.
func TestMemoryStoreExpiredKeyFreesItsBytes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := &idempotency.MemoryStore{TTL: time.Minute, MaxBytes: 10}
		for range 3 {
			if _, mine, err := s.Reserve(ctx, "k", [32]byte{}); !mine || err != nil {
				t.Fatal("not reserved", err)
			}
			_ = s.Complete(ctx, "k", &idempotency.Record{Body: []byte("12345678")})
			if _, ok, _ := s.Get(ctx, "k"); !ok {
				t.Fatal("an answer within MaxBytes was dropped")
			}
			time.Sleep(2 * time.Minute)
		}
	})
}

// Many keys reserved and forgotten while one runs keep the store's memory
// bounded.
func TestMemoryStoreChurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &idempotency.MemoryStore{MaxKeys: 4}
	_, _, _ = s.Reserve(ctx, "running", [32]byte{})
	for i := range 10_000 {
		k := strconv.Itoa(i)
		if _, _, err := s.Reserve(ctx, k, [32]byte{}); err != nil {
			t.Fatal(err)
		}
		_ = s.Complete(ctx, k, nil)
	}
	if rec, ok, _ := s.Get(ctx, "running"); !ok || rec.Done {
		t.Fatal("the running key was lost")
	}
}

// A key completed twice counts its last answer against MaxBytes, not both.
func TestMemoryStoreCompleteTwiceCountsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &idempotency.MemoryStore{MaxBytes: 10}
	body := &idempotency.Record{Status: 200, Body: []byte("123456")}
	if _, _, err := s.Reserve(ctx, "a", [32]byte{}); err != nil {
		t.Fatal(err)
	}
	_ = s.Complete(ctx, "a", body)
	_ = s.Complete(ctx, "a", body) // 6 bytes kept, not 12
	if _, _, err := s.Reserve(ctx, "b", [32]byte{}); err != nil {
		t.Fatal(err)
	}
	_ = s.Complete(ctx, "b", &idempotency.Record{Status: 200, Body: []byte("1")})
	if _, ok, _ := s.Get(ctx, "a"); !ok {
		t.Fatal("7 bytes of answers in a store of 10 dropped the first: its bytes were counted twice")
	}
}

// MemoryStore keeps the contract every store keeps; it reads the time with
// package time, so its keys expire on a synctest bubble's fake clock.
func TestMemoryStoreContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, storetest.Suite{
		New: func(_ *testing.T, ttl time.Duration) idempotency.Store {
			return &idempotency.MemoryStore{TTL: ttl}
		},
		Synctest: true,
	})
}
