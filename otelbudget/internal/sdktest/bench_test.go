package sdktest_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/otelbudget"
)

// benchProviders returns an SDK meter provider (read by a manual reader, as
// a Prometheus exporter reads one) and a tracer provider that samples every
// span and exports none, so the figures are the instrumentation's own cost.
func benchProviders(b *testing.B) (*sdkmetric.MeterProvider, *sdktrace.TracerProvider) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	return mp, tp
}

// BenchmarkOpDo is the hot path of a request: a budget.Start and one Op.Do,
// with no observer, with the otel Observer (metrics only, the span in the
// context not recording) and with a recording span it annotates.
func BenchmarkOpDo(b *testing.B) {
	mp, tp := benchProviders(b)
	obs, err := otelbudget.NewObserver(otelbudget.WithMeterProvider(mp))
	if err != nil {
		b.Fatal(err)
	}
	work := func(context.Context) error { return nil }
	run := func(b *testing.B, parent context.Context, o budget.Observer) {
		op := &budget.Op{Name: "geometry"}
		cfg := budget.Config{Observer: o}
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := cfg.Start(parent, time.Second)
			_ = op.Do(ctx, work)
			cancel()
		}
	}
	b.Run("observer=none", func(b *testing.B) { run(b, context.Background(), nil) })
	b.Run("observer=otel", func(b *testing.B) { run(b, context.Background(), obs) })
	b.Run("observer=otel+span", func(b *testing.B) {
		ctx, span := tp.Tracer("bench").Start(context.Background(), "request")
		defer span.End()
		// A span holds at most 128 events; past that, AddEvent only counts
		// them, so this measures a span that is full after the first few
		// iterations. BenchmarkSpanEvents measures a fresh span.
		run(b, ctx, obs)
	})
}

// BenchmarkSpanEvents is one request's budget events (arrival and one
// attempt) annotating a fresh recording span, beside the span alone.
func BenchmarkSpanEvents(b *testing.B) {
	mp, tp := benchProviders(b)
	obs, err := otelbudget.NewObserver(otelbudget.WithMeterProvider(mp))
	if err != nil {
		b.Fatal(err)
	}
	tracer := tp.Tracer("bench")
	op := &budget.Op{Name: "geometry"}
	work := func(context.Context) error { return nil }
	for _, tc := range []struct {
		name string
		obs  budget.Observer
	}{{"observer=none", nil}, {"observer=otel", obs}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := budget.Config{Observer: tc.obs}
			b.ReportAllocs()
			for b.Loop() {
				sctx, span := tracer.Start(context.Background(), "request")
				ctx, cancel := cfg.Start(sctx, time.Second)
				_ = op.Do(ctx, work)
				cancel()
				span.End()
			}
		})
	}
}

// BenchmarkHTTP puts the observer's cost beside otelhttp's: a bare handler,
// otelhttp over it, httpbudget over it without and with the otel Observer,
// and both middlewares together, each serving one request with a
// Request-Timeout-Ms header through an httptest recorder.
func BenchmarkHTTP(b *testing.B) {
	mp, tp := benchProviders(b)
	obs, err := otelbudget.NewObserver(otelbudget.WithMeterProvider(mp))
	if err != nil {
		b.Fatal(err)
	}
	op := &budget.Op{Name: "geometry"}
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = op.Do(r.Context(), func(context.Context) error { return nil })
	})
	withOtelhttp := func(h http.Handler) http.Handler {
		return otelhttp.NewHandler(h, "server", otelhttp.WithMeterProvider(mp), otelhttp.WithTracerProvider(tp))
	}
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", bare},
		{"otelhttp", withOtelhttp(bare)},
		{"httpbudget", httpbudget.NewHandler(bare)},
		{"httpbudget+observer", httpbudget.NewHandler(bare, edge.WithObserver(obs))},
		{"otelhttp+httpbudget+observer", withOtelhttp(httpbudget.NewHandler(bare, edge.WithObserver(obs)))},
	} {
		b.Run(tc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/geometry", nil)
			req.Header.Set("Request-Timeout-Ms", "1000")
			b.ReportAllocs()
			for b.Loop() {
				tc.h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}

// BenchmarkObserve is the observer alone on one event of each common kind,
// its stage already seen: the metric path, and the span path on a fresh
// recording span.
func BenchmarkObserve(b *testing.B) {
	mp, tp := benchProviders(b)
	obs, err := otelbudget.NewObserver(otelbudget.WithMeterProvider(mp))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	now := time.Now()
	for _, ev := range []budget.Event{
		{Kind: budget.EventArrival, Stage: "request", At: now, Remaining: time.Second},
		{Kind: budget.EventAttempt, Stage: "geometry", At: now, Remaining: time.Second, Duration: time.Millisecond, Outcome: budget.OutcomeOK},
		{Kind: budget.EventRefuse, Stage: "geometry", At: now, Remaining: time.Millisecond, Outcome: budget.OutcomeInsufficient},
	} {
		b.Run("metrics/"+ev.Kind.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				obs.Observe(ctx, ev)
			}
		})
	}
	tracer := tp.Tracer("bench")
	ev := budget.Event{Kind: budget.EventAttempt, Stage: "geometry", At: now, Remaining: time.Second, Duration: time.Millisecond, Outcome: budget.OutcomeOK}
	b.Run("span/none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, span := tracer.Start(ctx, "request")
			span.End()
		}
	})
	b.Run("span/attempt", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sctx, span := tracer.Start(ctx, "request")
			obs.Observe(sctx, ev)
			span.End()
		}
	})
}
