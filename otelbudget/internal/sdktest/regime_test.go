package sdktest_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/otelbudget"
)

// WatchRegimes reports each op's regime with how long it has lasted: an op
// refusing a hung dependency shows as refusing, a healthy one as measuring.
func TestWatchRegimes(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })

	healthy := &budget.Op{Name: "cache"}
	hung := &budget.Op{Name: "db", Prior: 5 * time.Millisecond}
	now := time.Now()
	for i := range 10 { // ten calls cut off at 100 ms: the op refuses
		hung.EndAt(now.Add(-time.Second), now.Add(-time.Duration(i)*time.Millisecond), budget.OutcomeExpired, false)
	}
	if dec := hung.BeginAt(now, budget.Ask{Available: 50 * time.Millisecond}); dec.Admit {
		t.Fatalf("the hung op admitted a call: %+v", dec)
	}
	reg, err := otelbudget.WatchRegimes(mp, healthy, nil, hung)
	if err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "budget.op.regime" {
				continue
			}
			if m.Unit != "s" {
				t.Errorf("unit %q, want s", m.Unit)
			}
			for _, p := range m.Data.(metricdata.Gauge[float64]).DataPoints {
				stage, _ := p.Attributes.Value(otelbudget.AttrStage)
				regime, _ := p.Attributes.Value(otelbudget.AttrRegime)
				got[stage.AsString()] = regime.AsString()
				if p.Value < 0 {
					t.Errorf("%s: %v s in its regime", stage.AsString(), p.Value)
				}
			}
		}
	}
	if len(got) != 2 || got["cache"] != "measuring" || got["db"] != "refusing" {
		t.Fatalf("regimes reported %v, want cache measuring and db refusing", got)
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
}
