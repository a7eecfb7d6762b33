package budget_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/timebudget/budget"
)

// The allocation counts of the spending policies' hot paths, as measured.
// A change that raises one must say why.
func TestSpendingPolicyAllocations(t *testing.T) {
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	op := &budget.Op{Name: "dep", Cap: time.Second}
	retry := &budget.Retry{Quota: &budget.RetryQuota{}}
	hedge := &budget.Hedge{}
	unmeasured := &budget.Op{Name: "new", Cap: time.Second, MinSamples: math.MaxInt} // never hedges
	rb := &budget.RetryQuota{}
	q := &budget.Queue[int]{Target: -1} // no sojourn bound: a stalled test must not shed the item
	bg := context.Background()
	now := time.Now()
	cases := []struct {
		name string
		want float64
		fn   func()
	}{
		// What one attempt of Op.Do costs (its deadline context, timer and
		// cancel function: 4) plus the attempt number in its context (1).
		// Deciding, the retry budget and the ledger cost nothing.
		{"retry of a succeeding call", 5, func() { _ = retry.Do(ctx, op, succeed) }},
		// The same, plus the adapter that gives fn a result for HedgeCall.
		{"hedge before measurements", 6, func() { _ = hedge.Do(ctx, unmeasured, succeed) }},
		{"retry budget deposit and withdrawal", 0, func() { rb.Deposit(now); rb.Withdraw(now) }},
		{"queue put and get", 0, func() { _ = q.Put(ctx, 1); _, _, _ = q.Get(bg) }},
		// Its state, the context without cancellation, the value and the
		// deadline context with its timer.
		{"detach", 7, func() { _, c := budget.Detach(ctx, "audit", time.Second); c() }},
	}
	for _, tc := range cases {
		// AllocsPerRun counts every allocation in the process. The runtime's
		// own (timer heaps growing on a loaded machine) can add some and never
		// remove any, so the least of three measurements is the code's.
		got := testing.AllocsPerRun(1000, tc.fn)
		for range 2 {
			got = min(got, testing.AllocsPerRun(1000, tc.fn))
		}
		if got != tc.want {
			t.Errorf("%s: %v allocations, want %v", tc.name, got, tc.want)
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
		"Remaining": func() { budget.Remaining(ctx) },
		"Available": func() { budget.Available(ctx) },
		"Admit":     func() { op.Admit(ctx) },
		"BeginAt and EndAt": func() {
			now := time.Now()
			dec := op.BeginAt(now, budget.Ask{Available: time.Hour})
			op.EndAt(now, now.Add(time.Millisecond), budget.OutcomeOK, dec.Probe)
		},
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
	// The same under a concurrency limit learned from a refusal.
	limited := refusedOp()
	if n := testing.AllocsPerRun(1000, func() { _ = limited.Do(noLedger, fn) }); n > 4 {
		t.Errorf("Op.Do under a learned limit allocates %v times per call, want at most 4", n)
	}
}
