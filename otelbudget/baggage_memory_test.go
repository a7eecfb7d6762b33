package otelbudget_test

import (
	"context"
	"net/http"
	"runtime"
	"testing"

	"go.opentelemetry.io/otel/propagation"

	"github.com/timebudget/budget/otelbudget"
)

// TestExtractHoldsNoMemory: Extract on a parent that never ends (a queue
// consumer's context.Background()) holds nothing once its context is
// dropped, however far away the member's deadline lies. Before, each call
// kept a timer-backed context (about 1.9 KB) until the deadline: with
// budget-deadline=999999999999999 (year 33658), for good.
func TestExtractHoldsNoMemory(t *testing.T) {
	// Not parallel: it measures the heap.
	prop := otelbudget.NewPropagator()
	for _, member := range []string{"999999999999999", "4102444800000"} {
		h := http.Header{"Baggage": {otelbudget.BaggageKey + "=" + member + ",user=42"}}
		const n = 100_000
		before := liveHeap()
		for range n {
			ctx := prop.Extract(context.Background(), propagation.HeaderCarrier(h))
			if _, ok := ctx.Deadline(); !ok {
				t.Fatalf("%s: no deadline on the extracted context", member)
			}
		}
		after := liveHeap()
		// 100 bytes a message would be 10 MB: far above what stays when
		// nothing is held, far below what a timer per message holds.
		if grew := int64(after) - int64(before); grew > n*100 {
			t.Errorf("budget-deadline=%s: heap grew %d bytes over %d extracts (%d a message), want it released", member, grew, n, grew/n)
		}
	}
}

// liveHeap returns the bytes live on the heap once the garbage collector,
// and the cleanups it queues, have run.
func liveHeap() uint64 {
	var m runtime.MemStats
	prev := ^uint64(0)
	// Cleanups run after a collection, on their own goroutine: collect
	// until the heap stops shrinking (a few rounds at most).
	for range 20 {
		runtime.GC()
		runtime.Gosched()
		runtime.ReadMemStats(&m)
		if m.HeapAlloc >= prev {
			break
		}
		prev = m.HeapAlloc
	}
	return m.HeapAlloc
}
