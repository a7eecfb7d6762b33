package budget_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/timebudget/budget"
)

// BenchmarkTimeNow is the floor under every figure here: one reading of the
// wall and monotonic clocks. On virtual machines it can dominate.
func BenchmarkTimeNow(b *testing.B) {
	b.ReportAllocs()
	var t time.Time
	for b.Loop() {
		t = time.Now()
	}
	_ = t
}

// BenchmarkContextWithDeadline is the baseline: what a plain per-call
// context.WithDeadline and its cancel cost.
func BenchmarkContextWithDeadline(b *testing.B) {
	b.ReportAllocs()
	parent := context.Background()
	for b.Loop() {
		ctx, cancel := context.WithDeadline(parent, time.Now().Add(time.Second))
		_ = ctx
		cancel()
	}
}

func BenchmarkStart(b *testing.B) {
	b.ReportAllocs()
	parent := context.Background()
	for b.Loop() {
		_, cancel := budget.Start(parent, time.Second)
		cancel()
	}
}

func BenchmarkRemaining(b *testing.B) {
	b.ReportAllocs()
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	for b.Loop() {
		budget.Remaining(ctx)
	}
}

func learnedOp() *budget.Op {
	op := &budget.Op{Name: "dep"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		op.Estimator.Record(time.Duration(r.ExpFloat64() * float64(20*time.Millisecond)))
	}
	return op
}

// BenchmarkAdmit is one admission decision from a request context: read the
// time available (remaining less reserve) and ask the op's estimate.
func BenchmarkAdmit(b *testing.B) {
	b.ReportAllocs()
	op := learnedOp()
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	ctx = budget.WithReserve(ctx, 10*time.Millisecond)
	for b.Loop() {
		if !op.Admit(ctx).Admit {
			b.Fatal("refused")
		}
	}
}

func BenchmarkEstimatorRecordParallel(b *testing.B) {
	b.ReportAllocs()
	var e budget.Estimator
	b.SetParallelism(1) // GOMAXPROCS goroutines: 2 on the reference machine
	b.RunParallel(func(pb *testing.PB) {
		d := time.Duration(rand.Int64N(int64(100 * time.Millisecond)))
		for pb.Next() {
			e.Record(d)
			d += 7919 // walk across buckets
			if d > 100*time.Millisecond {
				d = 0
			}
		}
	})
}

// BenchmarkDo is a whole admitted attempt of a function that returns at once:
// admission, the attempt's context, the call, recording and the ledger.
func BenchmarkDo(b *testing.B) {
	b.ReportAllocs()
	op := learnedOp()
	ctx, cancel := budget.Config{LedgerCapacity: -1}.Start(context.Background(), time.Hour)
	defer cancel()
	fn := func(context.Context) error { return nil }
	for b.Loop() {
		if err := op.Do(ctx, fn); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoUnderLearnedLimit is BenchmarkDo while the op holds a
// concurrency limit learned from a refusal (its window of an hour keeps the
// limit for the whole run): the limit's check, its slot and its additive
// increase on top.
func BenchmarkDoUnderLearnedLimit(b *testing.B) {
	b.ReportAllocs()
	op := refusedOp()
	ctx, cancel := budget.Config{LedgerCapacity: -1}.Start(context.Background(), time.Hour)
	defer cancel()
	fn := func(context.Context) error { return nil }
	for b.Loop() {
		if err := op.Do(ctx, fn); err != nil {
			b.Fatal(err)
		}
	}
}

// refusedOp is a learned op, with estimator windows of an hour, that has
// seen its dependency refuse one call and so holds a learned limit.
func refusedOp() *budget.Op {
	op := &budget.Op{Name: "dep", Estimator: budget.Estimator{Window: time.Hour}}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		op.Estimator.Record(time.Duration(r.ExpFloat64() * float64(20*time.Millisecond)))
	}
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	_ = op.Do(ctx, func(context.Context) error { return budget.DoNotRetry(errors.New("full"), budget.ServerRefused) })
	return op
}

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

// BenchmarkRetryQuotaParallel is a deposit and a withdrawal from many
// goroutines sharing one retry budget.
func BenchmarkRetryQuotaParallel(b *testing.B) {
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
