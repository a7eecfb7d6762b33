package sdktest_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/timebudget/budget/otelbudget"
)

// rig is an observer wired to an in-memory metric reader and a span
// recorder.
type rig struct {
	reader *sdkmetric.ManualReader
	meters *sdkmetric.MeterProvider
	spans  *tracetest.SpanRecorder
	traces *sdktrace.TracerProvider
	tracer trace.Tracer
	obs    *otelbudget.Observer
}

func newRig(t *testing.T, opts ...otelbudget.Option) *rig {
	t.Helper()
	r := &rig{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	r.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	r.traces, r.tracer = tp, tp.Tracer("test")
	t.Cleanup(func() {
		_ = r.meters.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	obs, err := otelbudget.NewObserver(append([]otelbudget.Option{otelbudget.WithMeterProvider(r.meters)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	r.obs = obs
	return r
}

// point is one data point of a counter or histogram, reduced to what the
// tests check.
type point struct {
	attrs     attribute.Set
	count     int64 // a counter's value, or a histogram's sample count
	sum       float64
	traceIDs  []trace.TraceID // of the point's exemplars
	histogram bool
}

// metric is one instrument's collected data.
type metric struct {
	unit   string
	points []point
}

// collect reads every metric the rig's provider holds, by name.
func (r *rig) collect(t *testing.T) map[string]metric {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metric{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got := metric{unit: m.Unit}
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					p := point{attrs: dp.Attributes, count: dp.Value, sum: float64(dp.Value)}
					for _, ex := range dp.Exemplars {
						p.traceIDs = append(p.traceIDs, trace.TraceID(ex.TraceID))
					}
					got.points = append(got.points, p)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					p := point{attrs: dp.Attributes, count: int64(dp.Count), sum: dp.Sum, histogram: true}
					for _, ex := range dp.Exemplars {
						p.traceIDs = append(p.traceIDs, trace.TraceID(ex.TraceID))
					}
					got.points = append(got.points, p)
				}
			case metricdata.Histogram[int64]:
				for _, dp := range data.DataPoints {
					got.points = append(got.points, point{attrs: dp.Attributes, count: int64(dp.Count), histogram: true})
				}
			default:
				t.Errorf("%s: unexpected aggregation %T", m.Name, m.Data)
			}
			out[m.Name] = got
		}
	}
	return out
}

// find returns the point of m whose attributes are exactly kv.
func (m metric) find(kv ...attribute.KeyValue) (point, bool) {
	want := attribute.NewSet(kv...)
	for _, p := range m.points {
		if p.attrs.Equals(&want) {
			return p, true
		}
	}
	return point{}, false
}

func stage(s string) attribute.KeyValue   { return attribute.String("stage", s) }
func reason(s string) attribute.KeyValue  { return attribute.String("reason", s) }
func outcome(s string) attribute.KeyValue { return attribute.String("outcome", s) }
func event(s string) attribute.KeyValue   { return attribute.String("event", s) }
