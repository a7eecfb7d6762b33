// Package storetest is the contract every [idempotency.Store] passes: a
// store's own tests call [Run] with a function that makes a fresh store,
// and the suite checks what the middleware of every protocol relies on.
//
//	func TestStoreContract(t *testing.T) {
//		storetest.Run(t, storetest.Suite{
//			New: func(t *testing.T, ttl time.Duration) idempotency.Store {
//				return &idempotency.MemoryStore{TTL: ttl}
//			},
//			Synctest: true,
//		})
//	}
//
// The suite covers: a new key is reserved by its first caller; a repeat
// while the first runs gets the running record, with the first fingerprint
// whatever fingerprint it brings; a completed key is done and replays its
// answer; Complete keeps the reservation's fingerprint and marks the record
// done; Complete(nil) forgets the key; a key that was never reserved cannot
// be completed into existence; keys expire by the store's time to live,
// running or done, and an expired key is reserved anew; of 200 concurrent
// Reserve calls for one key exactly one wins and the others see its
// fingerprint; and keys and values with odd bytes (Unicode, quotes and
// backslashes, bytes that are not UTF-8, every byte value in a body, a
// status of 0 as gRPC's OK) come back as they went in, and keys that differ
// by case or a trailing space stay apart.
//
// The package depends only on the standard library and this module.
package storetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget/idempotency"
)

// Suite describes the store under test.
type Suite struct {
	// New returns a new, empty store whose keys live ttl after Reserve.
	// It is called once per subtest, with that subtest's t: a store that
	// holds resources releases them with t.Cleanup. New must not be nil.
	New func(t *testing.T, ttl time.Duration) idempotency.Store
	// Synctest reports that the store reads the time with package time
	// and keeps no goroutine or connection between calls, so that the
	// suite can make and run it in a synctest bubble and expire keys on
	// fake time. When false (a store whose clock is a database server's),
	// the expiry test makes its store with ShortTTL and sleeps past it.
	Synctest bool
	// ShortTTL is the time to live of the expiry test's store when
	// Synctest is false. Zero means 300 ms; it must exceed the time a
	// Reserve and a Complete take, or the key expires before it is
	// completed.
	ShortTTL time.Duration
}

// longTTL is the time to live of every store but the expiry test's: longer
// than any test runs.
const longTTL = time.Hour

// Run runs the contract on stores s.New makes, one subtest per rule.
func Run(t *testing.T, s Suite) {
	t.Helper()
	if s.New == nil {
		t.Fatal("storetest: Suite.New is nil: give a function that makes a fresh store")
	}
	for _, c := range []struct {
		name string
		run  func(t *testing.T, st idempotency.Store)
	}{
		{"ReserveNew", reserveNew},
		{"RepeatWhileRunning", repeatWhileRunning},
		{"CompleteThenGet", completeThenGet},
		{"FingerprintKept", fingerprintKept},
		{"NotReplayable", notReplayable},
		{"CompleteNilForgets", completeNilForgets},
		{"CompleteUnknownKey", completeUnknown},
		{"OddBytes", oddBytes},
		{"ConcurrentReserve", concurrentReserve},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s.New(t, longTTL)) })
	}
	t.Run("Expiry", func(t *testing.T) {
		if s.Synctest {
			synctest.Test(t, func(t *testing.T) { expiry(t, s.New(t, time.Minute), time.Minute) })
			return
		}
		ttl := s.ShortTTL
		if ttl <= 0 {
			ttl = 300 * time.Millisecond
		}
		expiry(t, s.New(t, ttl), ttl)
	})
}

var (
	fpA = [32]byte{0: 'a', 31: 1}
	fpB = [32]byte{0: 'b', 31: 2}
)

func reserve(t *testing.T, st idempotency.Store, key string, fp [32]byte) (idempotency.Record, bool) {
	t.Helper()
	rec, mine, err := st.Reserve(context.Background(), key, fp)
	if err != nil {
		t.Fatalf("Reserve(%q): %v", key, err)
	}
	return rec, mine
}

func complete(t *testing.T, st idempotency.Store, key string, rec *idempotency.Record) {
	t.Helper()
	if err := st.Complete(context.Background(), key, rec); err != nil {
		t.Fatalf("Complete(%q): %v", key, err)
	}
}

func get(t *testing.T, st idempotency.Store, key string) (idempotency.Record, bool) {
	t.Helper()
	rec, ok, err := st.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return rec, ok
}

// mustReserve reserves key, failing unless the caller won it with a zero
// record.
func mustReserve(t *testing.T, st idempotency.Store, key string, fp [32]byte) {
	t.Helper()
	rec, mine := reserve(t, st, key, fp)
	if !mine {
		t.Fatalf("Reserve(%q) of a new key: not the caller's (record %+v)", key, rec)
	}
	if !isZero(rec) {
		t.Fatalf("Reserve(%q) of a new key returned a record: %+v", key, rec)
	}
}

// mustRunning checks that rec is key's running record with fingerprint fp.
func mustRunning(t *testing.T, what string, rec idempotency.Record, fp [32]byte) {
	t.Helper()
	if rec.Done || rec.Fingerprint != fp {
		t.Fatalf("%s: %+v, want a running record with fingerprint %x", what, rec, fp[:2])
	}
}

func reserveNew(t *testing.T, st idempotency.Store) {
	if _, ok := get(t, st, "k"); ok {
		t.Fatal("Get of a key never reserved found it")
	}
	mustReserve(t, st, "k", fpA)
	rec, ok := get(t, st, "k")
	if !ok {
		t.Fatal("Get after Reserve: key not found")
	}
	mustRunning(t, "Get after Reserve", rec, fpA)
	mustReserve(t, st, "other", fpA) // another key is another reservation
}

func repeatWhileRunning(t *testing.T, st idempotency.Store) {
	mustReserve(t, st, "k", fpA)
	rec, mine := reserve(t, st, "k", fpA)
	if mine {
		t.Fatal("a repeat while the first runs reserved the key again")
	}
	mustRunning(t, "repeat with the same fingerprint", rec, fpA)
	rec, mine = reserve(t, st, "k", fpB)
	if mine {
		t.Fatal("a repeat with another fingerprint reserved the key")
	}
	mustRunning(t, "repeat with another fingerprint", rec, fpA)
}

func answer() *idempotency.Record {
	return &idempotency.Record{
		Replayable: true,
		Status:     201,
		Header:     map[string][]string{"Content-Type": {"application/json"}, "X-Run": {"1", "2"}},
		Body:       []byte(`{"charged":10}`),
	}
}

func completeThenGet(t *testing.T, st idempotency.Store) {
	mustReserve(t, st, "k", fpA)
	complete(t, st, "k", answer())
	want := answer()
	want.Fingerprint, want.Done = fpA, true
	rec, ok := get(t, st, "k")
	if !ok {
		t.Fatal("Get after Complete: key not found")
	}
	mustEqual(t, "Get after Complete", rec, *want)
	rec, mine := reserve(t, st, "k", fpA)
	if mine {
		t.Fatal("Reserve of a completed key reserved it again")
	}
	mustEqual(t, "Reserve of a completed key", rec, *want)
}

func fingerprintKept(t *testing.T, st idempotency.Store) {
	mustReserve(t, st, "k", fpA)
	a := answer()
	a.Fingerprint = fpB // a record cannot change the reservation's fingerprint
	complete(t, st, "k", a)
	rec, ok := get(t, st, "k")
	if !ok || rec.Fingerprint != fpA || !rec.Done {
		t.Fatalf("after Complete with another fingerprint: %v %+v, want done with the reserved fingerprint", ok, rec)
	}
	if rec, _ := reserve(t, st, "k", fpB); rec.Fingerprint != fpA {
		t.Fatalf("a repeat with another fingerprint saw %x, want the reserved %x", rec.Fingerprint[:2], fpA[:2])
	}
}

func notReplayable(t *testing.T, st idempotency.Store) {
	mustReserve(t, st, "k", fpA)
	complete(t, st, "k", &idempotency.Record{Status: 200})
	rec, ok := get(t, st, "k")
	if !ok || !rec.Done || rec.Replayable || rec.Status != 200 || len(rec.Body) != 0 {
		t.Fatalf("a done, not replayable answer came back as %v %+v", ok, rec)
	}
}

func completeNilForgets(t *testing.T, st idempotency.Store) {
	mustReserve(t, st, "k", fpA)
	complete(t, st, "k", nil)
	if rec, ok := get(t, st, "k"); ok {
		t.Fatalf("Complete(nil) kept the key: %+v", rec)
	}
	mustReserve(t, st, "k", fpB) // a repeat runs the work again
	rec, _ := get(t, st, "k")
	mustRunning(t, "the key reserved again after Complete(nil)", rec, fpB)
}

func completeUnknown(t *testing.T, st idempotency.Store) {
	complete(t, st, "never", answer())
	if rec, ok := get(t, st, "never"); ok {
		t.Fatalf("Complete of a key never reserved made it: %+v", rec)
	}
	complete(t, st, "never", nil)
	mustReserve(t, st, "never", fpA)
}

func oddBytes(t *testing.T, st idempotency.Store) {
	var every []byte
	for b := range 256 {
		every = append(every, byte(b))
	}
	keys := []string{
		"ключ-🔑", `a b"'\%_*;--`, strings.Repeat("x", 255),
		"k", "k ", "K", // apart by a trailing space and by case
	}
	for i, key := range keys {
		mustReserve(t, st, key, [32]byte{0: byte(i), 31: 0xff})
		rec := &idempotency.Record{
			Replayable: true,
			Status:     i, // 0 first: gRPC's OK
			Header: map[string][]string{
				"X-Odd":           {"\xff\xfe not UTF-8", "", "\u0000 nul", "ünï"},
				"x-lower":         {key},
				"Grpc-Status-Bin": {string(every)},
			},
			Body: slices.Concat(every, []byte(key)),
		}
		complete(t, st, key, rec)
	}
	for i, key := range keys {
		want := idempotency.Record{
			Fingerprint: [32]byte{0: byte(i), 31: 0xff}, Done: true, Replayable: true, Status: i,
			Header: map[string][]string{
				"X-Odd":           {"\xff\xfe not UTF-8", "", "\u0000 nul", "ünï"},
				"x-lower":         {key},
				"Grpc-Status-Bin": {string(every)},
			},
			Body: slices.Concat(every, []byte(key)),
		}
		rec, ok := get(t, st, key)
		if !ok {
			t.Fatalf("key %q not found", key)
		}
		mustEqual(t, fmt.Sprintf("key %q", key), rec, want)
	}
}

func concurrentReserve(t *testing.T, st idempotency.Store) {
	const n = 200
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		wins  int
		fails []string
	)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			fp := fpA
			if i%2 == 1 {
				fp = fpB
			}
			<-start
			rec, mine, err := st.Reserve(context.Background(), "one", fp)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				fails = append(fails, err.Error())
			case mine:
				wins++
			case rec.Done || (rec.Fingerprint != fpA && rec.Fingerprint != fpB):
				fails = append(fails, fmt.Sprintf("a loser saw %+v", rec))
			}
		})
	}
	close(start)
	wg.Wait()
	if len(fails) > 0 {
		t.Fatalf("%d of %d concurrent Reserve calls failed, first: %s", len(fails), n, fails[0])
	}
	if wins != 1 {
		t.Fatalf("%d of %d concurrent Reserve calls of one key won it, want exactly 1", wins, n)
	}
	rec, ok := get(t, st, "one")
	if !ok || rec.Done {
		t.Fatalf("after the race: %v %+v, want the winner's running record", ok, rec)
	}
}

// expiry checks that a done and a running key are gone once ttl has passed
// since they were reserved, and are reserved anew.
func expiry(t *testing.T, st idempotency.Store, ttl time.Duration) {
	mustReserve(t, st, "done", fpA)
	complete(t, st, "done", answer())
	mustReserve(t, st, "running", fpA)
	time.Sleep(ttl + ttl/2)
	for _, key := range []string{"done", "running"} {
		if rec, ok := get(t, st, key); ok {
			t.Fatalf("the %s key outlived its time to live (%v): %+v", key, ttl, rec)
		}
		mustReserve(t, st, key, fpB)
		rec, ok := get(t, st, key)
		if !ok {
			t.Fatalf("the expired %s key reserved anew is not found", key)
		}
		mustRunning(t, "the expired "+key+" key reserved anew", rec, fpB)
	}
}

func isZero(r idempotency.Record) bool {
	return r.Fingerprint == [32]byte{} && !r.Done && !r.Replayable && r.Status == 0 && len(r.Header) == 0 && len(r.Body) == 0
}

// mustEqual compares two records, nil and empty headers, values and bodies
// alike.
func mustEqual(t *testing.T, what string, got, want idempotency.Record) {
	t.Helper()
	same := got.Fingerprint == want.Fingerprint && got.Done == want.Done && got.Replayable == want.Replayable &&
		got.Status == want.Status && bytes.Equal(got.Body, want.Body) && len(got.Header) == len(want.Header)
	for k, v := range want.Header {
		same = same && slices.Equal(got.Header[k], v)
	}
	if !same {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}
