package overload

import (
	"github.com/timebudget/budget/cmd/budget/internal/dependency"
	"github.com/timebudget/budget/cmd/budget/internal/scenario"
	"testing"
	"time"
)

// TestMeasureOverload checks how the overload figures are read from the
// users' samples: only requests sent while the dependency was slow count,
// and goodput is the share of the other requests answered within the budget.
func TestMeasureOverload(t *testing.T) {
	t.Parallel()
	st := &overloadSetup{svc: &overloadService{}, dep: dependency.New("reviews", time.Millisecond, true, scenario.Fault{}, nil)}
	st.svc.heldLate.Store(int64(2 * time.Second))
	st.svc.refused.Store(7)
	ms := time.Millisecond
	samples := []overloadSample{
		{slow: false, measured: false, latency: 900 * ms, ok: false}, // before the slowdown: ignored
		{slow: false, measured: true, latency: 10 * ms, ok: true},
		{slow: false, measured: true, latency: 20 * ms, ok: true},
		{slow: false, measured: true, latency: 600 * ms, ok: false},
		{slow: false, measured: true, latency: 30 * ms, ok: true},
		{slow: true, measured: true, latency: 500 * ms, ok: false},
		{slow: true, measured: true, latency: 5 * ms, ok: true},
	}
	run := measureOverload(Variants[0], st, samples)
	if run.sentOther != 4 || run.sentSlow != 2 {
		t.Errorf("sent %d other and %d slow, want 4 and 2", run.sentOther, run.sentSlow)
	}
	if run.goodput != 0.75 || run.slowOK != 0.5 {
		t.Errorf("goodput %v, slow answered %v; want 0.75 and 0.5", run.goodput, run.slowOK)
	}
	if run.otherP99 != 600*ms {
		t.Errorf("p99 of the other requests %v, want 600ms", run.otherP99)
	}
	if run.heldLate != 2*time.Second || run.refusedSlow != 7 {
		t.Errorf("held late %v, refused %d; want 2s and 7", run.heldLate, run.refusedSlow)
	}
}

// TestOverloadVariantsAreStrategies checks the variant table: every variant
// has a call, and exactly one sends the budget.
func TestOverloadVariantsAreStrategies(t *testing.T) {
	t.Parallel()
	aware := 0
	for _, v := range Variants {
		if v.call == nil || v.key == "" || v.about == "" {
			t.Errorf("variant %q has no call, key or description", v.Name)
		}
		if v.budgetAware {
			aware++
		}
	}
	if aware != 1 {
		t.Errorf("%d budget-aware variants, want 1", aware)
	}
}
