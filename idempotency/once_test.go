package idempotency_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/idempotency"
)

// downStore fails every call.
type downStore struct{}

var errDown = errors.New("store down")

func (downStore) Reserve(context.Context, string, [32]byte) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, errDown
}
func (downStore) Complete(context.Context, string, *idempotency.Record) error { return errDown }
func (downStore) Get(context.Context, string) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, errDown
}

func answer(body string) func(context.Context) idempotency.Record {
	return func(context.Context) idempotency.Record {
		return idempotency.Record{Replayable: true, Status: 200, Body: []byte(body)}
	}
}

// Each way Once answers, on one store.
func TestOnceResults(t *testing.T) {
	t.Parallel()
	store := new(idempotency.MemoryStore)
	ctx := context.Background()
	fp, other := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))

	rec, res, err := idempotency.Once(ctx, store, "k", fp, time.Second, answer("first"))
	if res != idempotency.Ran || err != nil || string(rec.Body) != "first" || !rec.Done || rec.Fingerprint != fp {
		t.Fatalf("first: %v %v %+v", res, err, rec)
	}
	rec, res, _ = idempotency.Once(ctx, store, "k", fp, time.Second, answer("second"))
	if res != idempotency.Replayed || string(rec.Body) != "first" {
		t.Fatalf("repeat: %v %q, want the first answer replayed", res, rec.Body)
	}
	if _, res, _ = idempotency.Once(ctx, store, "k", other, time.Second, answer("x")); res != idempotency.Mismatch {
		t.Fatalf("another payload: %v, want mismatch", res)
	}
	_, _, _ = idempotency.Once(ctx, store, "big", fp, time.Second, func(context.Context) idempotency.Record {
		return idempotency.Record{Status: 200, Body: []byte("too large")}
	})
	if rec, res, _ = idempotency.Once(ctx, store, "big", fp, time.Second, answer("x")); res != idempotency.NotReplayable || rec.Body != nil {
		t.Fatalf("an answer not kept: %v %q, want not_replayable without a body", res, rec.Body)
	}
	if _, res, err = idempotency.Once(ctx, downStore{}, "k", fp, time.Second, answer("x")); res != idempotency.StoreDown || !errors.Is(err, errDown) {
		t.Fatalf("store down: %v %v", res, err)
	}
	if _, res, err = idempotency.Once(ctx, nil, "k", fp, time.Second, answer("x")); res != idempotency.StoreDown || err == nil {
		t.Fatalf("nil store: %v %v", res, err)
	}
}

// A repeat of a key whose first request still runs waits for it within its
// budget, then is Busy; one with time enough gets the first answer.
func TestOnceWaitsForTheFirst(t *testing.T) {
	t.Parallel()
	store := new(idempotency.MemoryStore)
	fp := sha256.Sum256([]byte("a"))
	release := make(chan struct{})
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _, _ = idempotency.Once(context.Background(), store, "k", fp, time.Second, func(context.Context) idempotency.Record {
			close(started)
			<-release
			return idempotency.Record{Replayable: true, Status: 200, Body: []byte("first")}
		})
	})
	<-started
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, res, _ := idempotency.Once(short, store, "k", fp, time.Second, answer("x")); res != idempotency.Busy {
		t.Fatalf("a repeat out of budget: %v, want busy", res)
	}
	done := make(chan idempotency.Result)
	go func() {
		rec, res, _ := idempotency.Once(context.Background(), store, "k", fp, 10*time.Second, answer("x"))
		if string(rec.Body) != "first" {
			res = 0
		}
		done <- res
	}()
	close(release)
	if res := <-done; res != idempotency.Replayed {
		t.Fatalf("a repeat with time enough: %v, want the first answer replayed", res)
	}
	wg.Wait()
}

// A panicking first request forgets its key, so that a repeat runs the work.
func TestOnceForgetsTheKeyOnPanic(t *testing.T) {
	t.Parallel()
	store := new(idempotency.MemoryStore)
	fp := sha256.Sum256([]byte("a"))
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not go on")
			}
		}()
		_, _, _ = idempotency.Once(context.Background(), store, "k", fp, time.Second, func(context.Context) idempotency.Record { panic("boom") })
	}()
	if _, res, _ := idempotency.Once(context.Background(), store, "k", fp, time.Second, answer("again")); res != idempotency.Ran {
		t.Fatalf("after a panic: %v, want the work run again", res)
	}
}

// 200 concurrent requests with one key run the work once; the others get
// its answer.
func TestOnce200Concurrent(t *testing.T) {
	t.Parallel()
	store := new(idempotency.MemoryStore)
	fp := sha256.Sum256([]byte("a"))
	var runs atomic.Int32
	var bad atomic.Int32
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			rec, res, _ := idempotency.Once(context.Background(), store, "k", fp, 10*time.Second, func(context.Context) idempotency.Record {
				runs.Add(1)
				time.Sleep(10 * time.Millisecond)
				return idempotency.Record{Replayable: true, Status: 200, Body: []byte("once")}
			})
			if (res != idempotency.Ran && res != idempotency.Replayed) || string(rec.Body) != "once" {
				bad.Add(1)
			}
		})
	}
	wg.Wait()
	if runs.Load() != 1 || bad.Load() != 0 {
		t.Fatalf("the work ran %d times; %d requests did not get its answer", runs.Load(), bad.Load())
	}
}

// Once in a protocol's middleware: the first request runs the work, a
// repeat gets its answer, another payload under the same key is refused.
func ExampleOnce() {
	store := new(idempotency.MemoryStore)
	ctx := context.Background()
	charge := func(body string) {
		fp := sha256.Sum256([]byte("POST /charges " + body))
		rec, res, err := idempotency.Once(ctx, store, "key-1", fp, 10*time.Second, func(context.Context) idempotency.Record {
			return idempotency.Record{Replayable: true, Status: 201, Body: []byte("charged " + body)}
		})
		fmt.Println(res, rec.Status, string(rec.Body), err)
	}
	charge("10")
	charge("10")
	charge("99")
	// Output:
	// ran 201 charged 10 <nil>
	// replayed 201 charged 10 <nil>
	// mismatch 0  <nil>
}

// Fingerprint tells lists of parts apart even when their bytes run the same.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	a := idempotency.Fingerprint([]byte("/svc/M"), []byte("body"))
	if a != idempotency.Fingerprint([]byte("/svc/M"), []byte("body")) {
		t.Fatal("the same parts give two fingerprints")
	}
	for _, other := range [][][]byte{
		{[]byte("/svc/Mb"), []byte("ody")},
		{[]byte("/svc/M"), []byte("body"), nil},
		{[]byte("/svc/Mbody")},
		{[]byte("/svc/M"), []byte("bodY")},
	} {
		if idempotency.Fingerprint(other...) == a {
			t.Errorf("%q shares the fingerprint of [/svc/M body]", other)
		}
	}
}

// outOfTimeStore is a memory store whose reads fail as a database store's
// do when the caller's budget cannot cover them.
type outOfTimeStore struct{ idempotency.MemoryStore }

func (s *outOfTimeStore) Get(context.Context, string) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, fmt.Errorf("select: %w", budget.ErrInsufficient)
}

// A read made while waiting that fails for want of the request's budget is
// the budget running out (Busy, try again), not the store being down.
func TestOnceOutOfTimeWhileWaitingIsBusy(t *testing.T) {
	t.Parallel()
	store := new(outOfTimeStore)
	fp := sha256.Sum256([]byte("a"))
	if _, mine, err := store.Reserve(context.Background(), "k", fp); !mine || err != nil {
		t.Fatal(mine, err)
	}
	_, res, err := idempotency.Once(context.Background(), store, "k", fp, time.Second, answer("x"))
	if res != idempotency.Busy || err != nil {
		t.Fatalf("a read out of time: %v %v, want busy", res, err)
	}
}
