package edge_test

import (
	"context"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// The class a request is handled under is the first of: a trusted
// Request-Criticality header, the classifier, a class other than the default
// already on the arriving context (the baggage propagator's), the policy's
// Criticality.
func TestArriveCriticality(t *testing.T) {
	t.Parallel()
	crit := wire.Metadata{"request-criticality": {"critical"}, "request-timeout-ms": {"500"}}
	explicitDefault := wire.Metadata{"request-criticality": {"default"}, "request-timeout-ms": {"500"}}
	none := wire.Metadata{"request-timeout-ms": {"500"}}
	classOnly := wire.Metadata{"request-criticality": {"sheddable"}}
	edgePolicy := &wire.Policy{Trust: wire.SourcesNone, Max: time.Second}
	sheddablePolicy := &wire.Policy{Criticality: wire.CriticalitySheddable}
	classify := func(c budget.Criticality) edge.Request {
		return edge.Request{Header: none, Classified: true, Criticality: c}
	}
	for _, tc := range []struct {
		name   string
		p      *wire.Policy
		req    edge.Request
		parent budget.Criticality // the class on the arriving context
		want   budget.Criticality
	}{
		{"trusted header", &wire.Policy{}, edge.Request{Header: crit}, budget.DefaultCriticality, budget.Critical},
		{"trusted header beats the classifier", &wire.Policy{}, edge.Request{Header: crit, Classified: true, Criticality: budget.Sheddable}, budget.DefaultCriticality, budget.Critical},
		{"trusted header beats the context", &wire.Policy{}, edge.Request{Header: crit}, budget.Sheddable, budget.Critical},
		{"a trusted default header beats the context", &wire.Policy{}, edge.Request{Header: explicitDefault}, budget.Critical, budget.DefaultCriticality},
		{"an edge ignores the header", edgePolicy, edge.Request{Header: crit}, budget.DefaultCriticality, budget.DefaultCriticality},
		{"an edge's classifier decides", edgePolicy, edge.Request{Header: crit, Classified: true, Criticality: budget.Sheddable}, budget.DefaultCriticality, budget.Sheddable},
		{"the classifier beats the context", &wire.Policy{}, classify(budget.Sheddable), budget.Critical, budget.Sheddable},
		{"a classifier's default beats the context", &wire.Policy{}, classify(budget.DefaultCriticality), budget.Critical, budget.DefaultCriticality},
		{"the context's class beats the policy's", sheddablePolicy, edge.Request{Header: none}, budget.Critical, budget.Critical},
		{"an edge keeps the context's class", edgePolicy, edge.Request{Header: crit}, budget.Sheddable, budget.Sheddable},
		{"the context's class without a deadline", &wire.Policy{}, edge.Request{}, budget.Sheddable, budget.Sheddable},
		{"the policy's class for the unclassified", sheddablePolicy, edge.Request{Header: none}, budget.DefaultCriticality, budget.Sheddable},
		{"no deadline, a class", &wire.Policy{}, edge.Request{Header: classOnly}, budget.Critical, budget.Sheddable},
		{"enforcement off reads nothing", nil, edge.Request{Header: crit}, budget.DefaultCriticality, budget.DefaultCriticality},
		{"enforcement off keeps the context's class", nil, edge.Request{Header: crit}, budget.Sheddable, budget.Sheddable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Now = time.Now()
			parent := context.Background()
			if tc.parent != budget.DefaultCriticality {
				parent = budget.WithCriticality(parent, tc.parent)
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
