package edge_test

import (
	"context"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

func TestArriveCriticality(t *testing.T) {
	t.Parallel()
	crit := wire.Metadata{"request-criticality": {"critical"}, "request-timeout-ms": {"500"}}
	none := wire.Metadata{"request-timeout-ms": {"500"}}
	classOnly := wire.Metadata{"request-criticality": {"sheddable"}}
	edgePolicy := &wire.Policy{Trust: wire.SourcesNone, Max: time.Second}
	for _, tc := range []struct {
		name string
		p    *wire.Policy
		req  edge.Request
		want budget.Criticality
	}{
		{"trusted header", &wire.Policy{}, edge.Request{Header: crit}, budget.Critical},
		{"trusted header beats the classifier", &wire.Policy{}, edge.Request{Header: crit, Classified: true, Criticality: budget.Sheddable}, budget.Critical},
		{"an edge ignores the header", edgePolicy, edge.Request{Header: crit}, budget.DefaultCriticality},
		{"an edge's classifier decides", edgePolicy, edge.Request{Header: crit, Classified: true, Criticality: budget.Sheddable}, budget.Sheddable},
		{"the policy's class for the unclassified", &wire.Policy{Criticality: -1}, edge.Request{Header: none}, budget.Sheddable},
		{"no deadline, a class", &wire.Policy{}, edge.Request{Header: classOnly}, budget.Sheddable},
		{"enforcement off reads nothing", nil, edge.Request{Header: crit}, budget.DefaultCriticality},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Now = time.Now()
			parent := budget.WithCriticality(context.Background(), budget.Critical)
			if tc.p == nil {
				parent = context.Background()
			}
			ctx, cancel, _, err := edge.Arrival{}.Arrive(parent, tc.p, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if cancel != nil {
				defer cancel()
			}
			if got := budget.CriticalityFrom(ctx); got != tc.want {
				t.Errorf("class %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCriticalityValue(t *testing.T) {
	t.Parallel()
	for c, want := range map[budget.Criticality]string{budget.Critical: "critical", budget.Sheddable: "sheddable", budget.DefaultCriticality: ""} {
		v, ok := edge.CriticalityValue(budget.WithCriticality(context.Background(), c))
		if v != want || ok != (want != "") {
			t.Errorf("%v: %q, %v", c, v, ok)
		}
	}
}

// Arriving with a class costs nothing on top of arriving: the class rides in
// the budget's own context. It does not call t.Parallel: AllocsPerRun counts
// the whole process's allocations.
func TestArriveCriticalityAllocs(t *testing.T) {
	p := &wire.Policy{}
	with := wire.Metadata{"request-criticality": {"critical"}, "request-timeout-ms": {"500"}}
	without := wire.Metadata{"request-timeout-ms": {"500"}}
	a := edge.Arrival{LedgerCapacity: -1}
	cost := func(h wire.Header) float64 {
		return testing.AllocsPerRun(100, func() {
			_, cancel, _, _ := a.Arrive(context.Background(), p, edge.Request{Header: h, Now: time.Now()})
			cancel()
		})
	}
	if w, wo := cost(with), cost(without); w != wo {
		t.Errorf("arriving with a class costs %v allocations, without %v", w, wo)
	}
	ctx := budget.WithCriticality(context.Background(), budget.Critical)
	if n := testing.AllocsPerRun(100, func() { _, _ = edge.CriticalityValue(ctx) }); n != 0 {
		t.Errorf("CriticalityValue: %v allocations", n)
	}
}
