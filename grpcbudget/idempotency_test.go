package grpcbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/idempotency"
	"github.com/timebudget/budget/wire"
)

// serveIdempotent serves the test service behind the budget interceptor
// and the idempotency interceptor on store, with a client that sends keys.
// The budget keeps 100 ms to answer, so that a repeat's refusal reaches its
// caller before the caller's deadline on a busy machine.
func serveIdempotent(t *testing.T, store idempotency.Store) (testClient, *testService) {
	t.Helper()
	p := &wire.Policy{AnswerMargin: 100 * ms}
	return serve(t, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpcbudget.UnaryServerInterceptor(edge.WithPolicy(p)),
		grpcbudget.IdempotentUnaryServerInterceptor(store))}, withClient()...)
}

// keyed returns a context with a budget of d and an idempotency key.
func keyed(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := budget.Start(context.Background(), d)
	t.Cleanup(cancel)
	return budget.WithIdempotencyKey(ctx)
}

// callKeyed calls UnaryCall with body and returns the reply's header metadata.
func callKeyed(ctx context.Context, c testClient, body string) (metadata.MD, error) {
	var h metadata.MD
	_, err := c.UnaryCall(ctx, &grpc_testing.SimpleRequest{Payload: &grpc_testing.Payload{Body: []byte(body)}}, grpc.Header(&h))
	return h, err
}

// A repeat of a finished key gets the first answer, marked replayed,
// without running the handler; errors are replayed with their status. A
// call without a key runs every time.
func TestIdempotentReplaysAFinishedKey(t *testing.T) {
	t.Parallel()
	c, svc := serveIdempotent(t, new(idempotency.MemoryStore))
	ctx := keyed(t, 5*time.Second)
	for i := range 2 {
		h, err := callKeyed(ctx, c, "")
		if err != nil {
			t.Fatal(err)
		}
		if replayed := len(h[grpcbudget.IdempotentReplayedKey]) > 0; replayed != (i == 1) {
			t.Errorf("call %d: replayed %v", i+1, replayed)
		}
	}
	if n := svc.calls.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want 1", n)
	}
	failing := keyed(t, 5*time.Second)
	_, err1 := callKeyed(failing, c, "cancel-now")
	_, err2 := callKeyed(failing, c, "cancel-now")
	if status.Code(err2) != codes.Canceled || status.Convert(err2).Message() != status.Convert(err1).Message() {
		t.Errorf("a replayed error: %v, want the first %v", err2, err1)
	}
	if n := svc.calls.Load(); n != 2 {
		t.Fatalf("the handler ran %d times, want 2", n)
	}
	if _, err := callKeyed(context.Background(), c, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := callKeyed(context.Background(), c, ""); err != nil || svc.calls.Load() != 4 {
		t.Fatalf("calls without a key: %v, the handler ran %d times in all, want 4", err, svc.calls.Load())
	}
}

// A key reused with another request message is refused.
func TestIdempotentRefusesAChangedRequest(t *testing.T) {
	t.Parallel()
	c, svc := serveIdempotent(t, new(idempotency.MemoryStore))
	ctx := keyed(t, 5*time.Second)
	if _, err := callKeyed(ctx, c, ""); err != nil {
		t.Fatal(err)
	}
	_, err := callKeyed(ctx, c, "sleep:1ms")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "another call") {
		t.Fatalf("a changed request: %v, want INVALID_ARGUMENT", err)
	}
	if n := svc.calls.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want 1", n)
	}
}

// A duplicate that arrives while the first call runs waits for its answer;
// one whose budget cannot cover the wait gets ABORTED.
func TestIdempotentConcurrentDuplicate(t *testing.T) {
	// Not parallel: the refusal must reach the caller within its budget, which
	// 200 concurrent calls of another test on two cores could starve.
	c, svc := serveIdempotent(t, new(idempotency.MemoryStore))
	ctx := keyed(t, 10*time.Second)
	key, _ := budget.IdempotencyKeyFrom(ctx)
	first := make(chan error, 1)
	go func() { _, err := callKeyed(ctx, c, "sleep:1s"); first <- err }()
	waitFor(t, func() bool { return svc.calls.Load() == 1 })

	short, cancel := budget.Start(context.Background(), 300*ms)
	defer cancel()
	short = withKey(short, key)
	if _, err := callKeyed(short, c, "sleep:1s"); status.Code(err) != codes.Aborted {
		t.Errorf("a duplicate out of budget: %v, want ABORTED", err)
	}
	h, err := callKeyed(ctx, c, "sleep:1s")
	if err != nil || len(h[grpcbudget.IdempotentReplayedKey]) == 0 {
		t.Errorf("a duplicate that waited: %v, header %v; want the first answer replayed", err, h)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := svc.calls.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want 1", n)
	}
}

// withKey returns ctx carrying the idempotency key of another context.
func withKey(ctx context.Context, key string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, grpcbudget.IdempotencyKeyKey, key)
}

// A key the store let expire runs the handler again.
func TestIdempotentExpiredKeyRunsAgain(t *testing.T) {
	t.Parallel()
	c, svc := serveIdempotent(t, &idempotency.MemoryStore{TTL: 20 * ms})
	ctx := keyed(t, 5*time.Second)
	if _, err := callKeyed(ctx, c, ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(40 * ms) // past the TTL: the key is gone, whatever the load
	h, err := callKeyed(ctx, c, "")
	if err != nil || len(h[grpcbudget.IdempotentReplayedKey]) != 0 || svc.calls.Load() != 2 {
		t.Fatalf("after the TTL: %v, replayed %v, the handler ran %d times; want it run again", err, h, svc.calls.Load())
	}
}

// failingStore fails every call.
type failingStore struct{}

func (failingStore) Reserve(context.Context, string, [32]byte) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, errors.New("connection refused")
}
func (failingStore) Complete(context.Context, string, *idempotency.Record) error {
	return errors.New("connection refused")
}
func (failingStore) Get(context.Context, string) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, errors.New("connection refused")
}

// A store that is down fails closed: UNAVAILABLE, the handler not run. A
// call without a key does not need the store.
func TestIdempotentStoreDownFailsClosed(t *testing.T) {
	t.Parallel()
	c, svc := serveIdempotent(t, failingStore{})
	if _, err := callKeyed(keyed(t, 5*time.Second), c, ""); status.Code(err) != codes.Unavailable {
		t.Fatalf("store down: %v, want UNAVAILABLE", err)
	}
	if n := svc.calls.Load(); n != 0 {
		t.Fatalf("the handler ran %d times, want 0", n)
	}
	if _, err := callKeyed(context.Background(), c, ""); err != nil {
		t.Fatalf("a call without a key: %v", err)
	}
}

// 200 concurrent retries of one key run the handler exactly once, and
// every one gets the answer.
func TestIdempotent200ConcurrentRetries(t *testing.T) {
	t.Parallel()
	c, svc := serveIdempotent(t, new(idempotency.MemoryStore))
	ctx := keyed(t, 20*time.Second)
	var failed atomic.Int32
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if _, err := callKeyed(ctx, c, "sleep:20ms"); err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := svc.calls.Load(); n != 1 || failed.Load() != 0 {
		t.Fatalf("the handler ran %d times and %d calls failed; want 1 and 0", n, failed.Load())
	}
}

// Hostile keys are refused with INVALID_ARGUMENT naming what was wrong,
// before the handler or the store.
func TestIdempotentRefusesHostileKeys(t *testing.T) {
	t.Parallel()
	intercept := grpcbudget.IdempotentUnaryServerInterceptor(failingStore{})
	ran := false
	handler := func(context.Context, any) (any, error) { ran = true; return nil, nil }
	for _, tc := range []struct {
		name string
		vals []string
		why  string
	}{
		{"empty", []string{""}, "empty"},
		{"10 KB", []string{strings.Repeat("k", 10<<10)}, "longer than 255 bytes"},
		{"control character", []string{"a\x01b"}, "control character"},
		{"several values", []string{"a", "b"}, "more than once"},
		{"a list", []string{"a,b"}, "more than one value"},
	} {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.MD{grpcbudget.IdempotencyKeyKey: tc.vals})
		_, err := intercept(ctx, &grpc_testing.SimpleRequest{}, &grpcUnaryInfo, handler)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v, want INVALID_ARGUMENT saying %q", tc.name, err, tc.why)
		}
	}
	if ran {
		t.Fatal("the handler ran for a hostile key")
	}
}

// The idempotency interceptor needs a store.
func TestIdempotentNilStorePanicsAtSetup(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a nil store")
		}
	}()
	grpcbudget.IdempotentUnaryServerInterceptor(nil)
}

// A call without a key costs the idempotency interceptor no allocation:
// it reads one metadata key and calls the handler.
func TestIdempotentWithoutKeyAllocatesNothing(t *testing.T) {
	intercept := grpcbudget.IdempotentUnaryServerInterceptor(failingStore{})
	ctx := metadata.NewIncomingContext(context.Background(), metadata.MD{"other": {"x"}})
	req := &grpc_testing.SimpleRequest{}
	if n := testing.AllocsPerRun(500, func() { _, _ = intercept(ctx, req, &grpcUnaryInfo, bare) }); n != 0 {
		t.Fatalf("a call without a key: %v allocations, want 0", n)
	}
}

// BenchmarkIdempotentUnary is the interceptor on a memory store against the
// handler alone: a call without a key, and the replay of a finished key.
func BenchmarkIdempotentUnary(b *testing.B) {
	intercept := grpcbudget.IdempotentUnaryServerInterceptor(new(idempotency.MemoryStore))
	req := &grpc_testing.SimpleRequest{Payload: &grpc_testing.Payload{Body: []byte("charge 10")}}
	handler := func(context.Context, any) (any, error) { return &grpc_testing.SimpleResponse{Username: "ok"}, nil }
	b.Run("handler alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = handler(context.Background(), req)
		}
	})
	b.Run("without a key", func(b *testing.B) {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.MD{})
		b.ReportAllocs()
		for b.Loop() {
			_, _ = intercept(ctx, req, &grpcUnaryInfo, handler)
		}
	})
	b.Run("replay", func(b *testing.B) {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.MD{grpcbudget.IdempotencyKeyKey: {"k"}})
		_, _ = intercept(ctx, req, &grpcUnaryInfo, handler)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := intercept(ctx, req, &grpcUnaryInfo, handler); err != nil {
				b.Fatal(err)
			}
		}
	})
}
