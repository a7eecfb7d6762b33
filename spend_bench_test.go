package budget_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/timebudget/budget"
)

func eightBranches() []budget.Branch[int] {
	branches := make([]budget.Branch[int], 8)
	for i := range branches {
		branches[i] = budget.Branch[int]{Name: "b", Fn: func(context.Context) (int, error) { return i, nil }}
	}
	return branches
}

// BenchmarkGather8 is a fan-out of eight trivial branches; compare with
// BenchmarkBaselineFanOut8.
func BenchmarkGather8(b *testing.B) {
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	g := budget.Gather[int]{Branches: eightBranches()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Do(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineFanOut8 is the errgroup pattern written with plain
// goroutines and a sync.WaitGroup: a cancelable context, the first error
// kept, every branch waited for.
func BenchmarkBaselineFanOut8(b *testing.B) {
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	branches := eightBranches()
	b.ReportAllocs()
	for b.Loop() {
		gctx, gcancel := context.WithCancel(ctx)
		results := make([]int, len(branches))
		var wg sync.WaitGroup
		var once sync.Once
		var first error
		for i, br := range branches {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := br.Fn(gctx)
				if err != nil {
					once.Do(func() { first = err; gcancel() })
				}
				results[i] = v
			}()
		}
		wg.Wait()
		gcancel()
		if first != nil {
			b.Fatal(first)
		}
	}
}

func succeed(context.Context) error { return nil }

// BenchmarkRetrySuccess is a retry loop whose first attempt succeeds; compare
// with BenchmarkBaselineBareCall and BenchmarkBaselineTimeoutCall.
func BenchmarkRetrySuccess(b *testing.B) {
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	op := &budget.Op{Name: "dep", Cap: time.Second}
	r := &budget.Retry{Quota: &budget.RetryQuota{}}
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Do(ctx, op, succeed); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineBareCall calls the function directly.
func BenchmarkBaselineBareCall(b *testing.B) {
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	fn := succeed
	b.ReportAllocs()
	for b.Loop() {
		if err := fn(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineTimeoutCall is careful Go code: a per-call
// context.WithTimeout around the call.
func BenchmarkBaselineTimeoutCall(b *testing.B) {
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	fn := succeed
	b.ReportAllocs()
	for b.Loop() {
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		err := fn(cctx)
		ccancel()
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRetryBudgetParallel is a deposit and a withdrawal from many
// goroutines sharing one retry budget.
func BenchmarkRetryBudgetParallel(b *testing.B) {
	rb := &budget.RetryQuota{}
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rb.Deposit(now)
			rb.Withdraw(now)
		}
	})
}

// BenchmarkQueuePutGet is one Put and one Get that finds the item.
func BenchmarkQueuePutGet(b *testing.B) {
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	q := &budget.Queue[int]{Target: -1} // no sojourn bound: a stalled benchmark must not shed the item
	bg := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := q.Put(ctx, 1); err != nil {
			b.Fatal(err)
		}
		if _, _, err := q.Get(bg); err != nil {
			b.Fatal(err)
		}
	}
}
