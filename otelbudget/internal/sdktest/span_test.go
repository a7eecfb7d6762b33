package sdktest_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/otelbudget"
	"github.com/timebudget/budget/wire"
)

// TestBesideOtelhttp runs the observer under otelhttp's server handler: the
// budget shows on otelhttp's spans (attributes at arrival, one span event per
// ledger entry, the refusal of a request refused on arrival), the refusal's
// metric sample links to that span's trace by an exemplar, and otelhttp's own
// request metric counts each request once.
func TestBesideOtelhttp(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := otelhttp.NewHandler(httpbudget.NewHandler(scenarios(), edge.WithObserver(r.obs)), "server",
		otelhttp.WithMeterProvider(r.meters), otelhttp.WithTracerProvider(r.traces))
	srv := httptest.NewServer(h)
	defer srv.Close()

	get(t, srv.URL+"/ok", wire.HeaderRequestTimeout, "2000")
	get(t, srv.URL+"/refuse", wire.HeaderRequestTimeout, "2000")
	get(t, srv.URL+"/ok", wire.HeaderRequestTimeout, "0")
	get(t, srv.URL+"/expire", wire.HeaderRequestTimeout, "2000")
	const requests = 4

	spans := r.spans.Ended()
	if len(spans) != requests {
		t.Fatalf("%d spans, want %d", len(spans), requests)
	}
	// In the order the requests were sent: a span may end after the next
	// one has started, but it starts before.
	slices.SortFunc(spans, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	ok, refusedInside, refusedOnArrival, expired := spans[0], spans[1], spans[2], spans[3]

	attrs := spanAttrs(ok)
	if v := attrs[otelbudget.AttrRemainingMS]; v.AsFloat64() <= 1000 || v.AsFloat64() > 2000 {
		t.Errorf("budget.remaining_ms = %v, want the 2000 ms sent less transit", v.String())
	}
	if v := attrs[otelbudget.AttrStage]; v.AsString() != "request" {
		t.Errorf("budget.stage = %q, want request", v.AsString())
	}
	if names := eventNames(ok); names != "budget.arrival budget.attempt" {
		t.Errorf("span events %q, want an arrival and an attempt", names)
	}
	for _, ev := range ok.Events() {
		if ev.Name == "budget.attempt" && !hasAttr(ev.Attributes, "budget.stage", "fast") {
			t.Errorf("the attempt's span event lacks its stage: %v", ev.Attributes)
		}
	}

	attrs = spanAttrs(refusedInside)
	if attrs[otelbudget.AttrRefusalStage].AsString() != "costly" || attrs[otelbudget.AttrRefusalReason].AsString() != "insufficient" {
		t.Errorf("refused op: span attributes %v", attrs)
	}
	if names := eventNames(refusedInside); names != "budget.arrival budget.refuse" {
		t.Errorf("span events %q, want an arrival and a refusal", names)
	}

	attrs = spanAttrs(refusedOnArrival)
	if attrs[otelbudget.AttrRefusalStage].AsString() != "request" || attrs[otelbudget.AttrRefusalReason].AsString() != "expired" {
		t.Errorf("request refused on arrival: span attributes %v", attrs)
	}

	got := r.collect(t)
	p, found := got["budget.refusals"].find(stage("request"), reason("expired"))
	if !found || len(p.traceIDs) == 0 {
		t.Fatalf("the refusal's sample has no exemplar (found %v)", found)
	}
	if p.traceIDs[0] != refusedOnArrival.SpanContext().TraceID() {
		t.Errorf("exemplar trace %s, want the refused request's trace %s", p.traceIDs[0], refusedOnArrival.SpanContext().TraceID())
	}

	p, found = got["budget.expiries"].find(stage("slow"))
	if !found || len(p.traceIDs) == 0 || p.traceIDs[0] != expired.SpanContext().TraceID() {
		t.Errorf("the expiry's sample does not link to the expired request's trace %s: %v (found %v)",
			expired.SpanContext().TraceID(), p.traceIDs, found)
	}

	var httpCount int64
	for name, m := range got {
		switch {
		case name == "http.server.request.duration":
			for _, p := range m.points {
				httpCount += p.count
			}
		case strings.HasPrefix(name, "http."):
		case !strings.HasPrefix(name, "budget."):
			t.Errorf("the observer recorded %s, outside its budget.* names", name)
		}
	}
	if httpCount != requests {
		t.Errorf("otelhttp counted %d requests, want %d: each request is counted once", httpCount, requests)
	}
}

// TestSpanWithoutRecording checks that events in a context without a
// recording span, and an observer made WithoutSpans, leave spans alone.
func TestSpanWithoutRecording(t *testing.T) {
	t.Parallel()
	r := newRig(t, otelbudget.WithoutSpans())
	ctx, span := r.tracer.Start(context.Background(), "op")
	r.obs.Observe(ctx, budget.Event{Kind: budget.EventRefuse, Stage: "s", Outcome: budget.OutcomeInsufficient})
	span.End()
	if n := len(r.spans.Ended()[0].Events()); n != 0 {
		t.Errorf("WithoutSpans: %d span events, want none", n)
	}

	r = newRig(t)
	r.obs.Observe(context.Background(), budget.Event{Kind: budget.EventRefuse, Stage: "s", Outcome: budget.OutcomeInsufficient})
	otelbudget.SetSource(context.Background(), "request-timeout-ms") // no span: nothing to do

	ctx, span = r.tracer.Start(context.Background(), "op")
	otelbudget.SetSource(ctx, "request-timeout-ms")
	otelbudget.SetSource(ctx, "")
	span.End()
	if v := spanAttrs(r.spans.Ended()[0])[otelbudget.AttrSource]; v.AsString() != "request-timeout-ms" {
		t.Errorf("budget.source = %q", v.AsString())
	}
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

func eventNames(s sdktrace.ReadOnlySpan) string {
	var names []string
	for _, ev := range s.Events() {
		names = append(names, ev.Name)
	}
	return strings.Join(names, " ")
}

func hasAttr(kvs []attribute.KeyValue, key, value string) bool {
	for _, kv := range kvs {
		if string(kv.Key) == key && kv.Value.AsString() == value {
			return true
		}
	}
	return false
}
