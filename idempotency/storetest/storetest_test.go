package storetest_test

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/idempotency"
	"github.com/timebudget/budget/idempotency/storetest"
)

// broken is a MemoryStore with one defect, named by defect.
type broken struct {
	idempotency.MemoryStore
	defect string
}

func (b *broken) Reserve(ctx context.Context, key string, fp [32]byte) (idempotency.Record, bool, error) {
	switch b.defect {
	case "always-wins":
		_, _, _ = b.MemoryStore.Reserve(ctx, key, fp)
		return idempotency.Record{}, true, nil
	case "check-then-act": // not atomic: a Get, a pause, then the Reserve
		if rec, ok, _ := b.Get(ctx, key); ok {
			return rec, false, nil
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
		_ = b.MemoryStore.Complete(ctx, key, nil)
	}
	return b.MemoryStore.Reserve(ctx, key, fp)
}

func (b *broken) Complete(ctx context.Context, key string, rec *idempotency.Record) error {
	switch {
	case b.defect == "nil-kept" && rec == nil:
		return nil
	case b.defect == "fingerprint-replaced" && rec != nil:
		_ = b.MemoryStore.Complete(ctx, key, nil)
		_, _, _ = b.MemoryStore.Reserve(ctx, key, rec.Fingerprint)
	}
	return b.MemoryStore.Complete(ctx, key, rec)
}

func (b *broken) Get(ctx context.Context, key string) (idempotency.Record, bool, error) {
	rec, ok, err := b.MemoryStore.Get(ctx, key)
	if b.defect == "header-lost" {
		rec.Header = nil
	}
	return rec, ok, err
}

// TestBrokenStoreHelper runs the suite on the broken store its environment
// names; TestSuiteCatchesDefects runs it in a child process.
func TestBrokenStoreHelper(t *testing.T) {
	defect := os.Getenv("STORETEST_DEFECT")
	if defect == "" {
		return // run only as TestSuiteCatchesDefects's child
	}
	storetest.Run(t, storetest.Suite{
		New: func(_ *testing.T, ttl time.Duration) idempotency.Store {
			ttl = map[bool]time.Duration{true: 100 * time.Hour, false: ttl}[defect == "no-expiry"]
			return &broken{MemoryStore: idempotency.MemoryStore{TTL: ttl}, defect: defect}
		},
		Synctest: true,
	})
}

// The suite fails a store with any of these defects, in the subtest that
// names the rule it breaks, and passes a MemoryStore.
func TestSuiteCatchesDefects(t *testing.T) {
	t.Parallel()
	for defect, subtest := range map[string]string{
		"always-wins":          "RepeatWhileRunning",
		"check-then-act":       "ConcurrentReserve",
		"nil-kept":             "CompleteNilForgets",
		"fingerprint-replaced": "FingerprintKept",
		"header-lost":          "CompleteThenGet",
		"no-expiry":            "Expiry",
	} {
		t.Run(defect, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenStoreHelper$", "-test.v")
			cmd.Env = append(os.Environ(), "STORETEST_DEFECT="+defect)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a store whose defect is %s:\n%s", defect, out)
			}
			if want := "--- FAIL: TestBrokenStoreHelper/" + subtest; !strings.Contains(string(out), want) {
				t.Fatalf("%s: no %q in:\n%s", defect, want, out)
			}
		})
	}
}
