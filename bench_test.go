package budget_test

import (
	"context"
	"math/rand/v2"
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

func TestHotPathsDoNotAllocate(t *testing.T) {
	op := learnedOp()
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	ctx = budget.WithReserve(ctx, time.Millisecond)
	var e budget.Estimator
	cases := map[string]func(){
		"Remaining":                func() { budget.Remaining(ctx) },
		"Available":                func() { budget.Available(ctx) },
		"Admit":                    func() { op.Admit(ctx) },
		"Estimator.Record":         func() { e.Record(3 * time.Millisecond) },
		"Estimator.RecordCensored": func() { e.RecordCensored(3 * time.Millisecond) },
	}
	for name, fn := range cases {
		if n := testing.AllocsPerRun(1000, fn); n != 0 {
			t.Errorf("%s allocates %v times per call, want 0", name, n)
		}
	}
	// Starting a budget: context.WithDeadlineCause's four, and one block for
	// the budget's context, state and ledger.
	if n := testing.AllocsPerRun(1000, func() {
		_, c := budget.Start(context.Background(), time.Second)
		c()
	}); n > 5 {
		t.Errorf("Start allocates %v times, want at most 5", n)
	}
	// A whole attempt: the attempt context (timer context and its timer)
	// and the cancel function, nothing more.
	fn := func(context.Context) error { return nil }
	noLedger, cancel2 := budget.Config{LedgerCapacity: -1}.Start(context.Background(), time.Hour)
	defer cancel2()
	if n := testing.AllocsPerRun(1000, func() { _ = op.Do(noLedger, fn) }); n > 4 {
		t.Errorf("Op.Do allocates %v times per call, want at most 4", n)
	}
}
