package sdktest_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/timebudget/budget"
)

// TestSpanEventAttributes pins the attribute names and values of a span
// event, as trace queries spell them: every ledger number under its
// budget.* key, and nothing else.
func TestSpanEventAttributes(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx, span := r.tracer.Start(context.Background(), "call")
	r.obs.Observe(ctx, budget.Event{Kind: budget.EventAttempt, Stage: "db", Offset: 1500 * time.Microsecond,
		Remaining: 2 * time.Millisecond, Duration: 3 * time.Millisecond, Needed: 4 * time.Millisecond,
		Outcome: budget.OutcomeOK, Attempt: 2, Probe: true})
	r.obs.Observe(ctx, budget.Event{Kind: budget.EventRefuse, Stage: "db", Remaining: time.Millisecond,
		Outcome: budget.OutcomeInsufficient})
	span.End()

	spans := r.spans.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	events := spans[0].Events()
	if len(events) != 2 {
		t.Fatalf("%d span events, want 2: %v", len(events), events)
	}
	want := []map[attribute.Key]attribute.Value{{
		"budget.stage":        attribute.StringValue("db"),
		"budget.offset_ms":    attribute.Float64Value(1.5),
		"budget.remaining_ms": attribute.Float64Value(2),
		"budget.duration_ms":  attribute.Float64Value(3),
		"budget.needed_ms":    attribute.Float64Value(4),
		"budget.outcome":      attribute.StringValue(budget.OutcomeOK.String()),
		"budget.attempt":      attribute.IntValue(2),
		"budget.probe":        attribute.BoolValue(true),
	}, {
		"budget.stage":        attribute.StringValue("db"),
		"budget.offset_ms":    attribute.Float64Value(0),
		"budget.remaining_ms": attribute.Float64Value(1),
		"budget.outcome":      attribute.StringValue(budget.OutcomeInsufficient.String()),
		"budget.reason":       attribute.StringValue(budget.OutcomeInsufficient.String()),
	}}
	for i, ev := range events {
		got := map[attribute.Key]attribute.Value{}
		for _, kv := range ev.Attributes {
			got[kv.Key] = kv.Value
		}
		if len(got) != len(want[i]) {
			t.Errorf("event %s: attributes %v, want %v", ev.Name, got, want[i])
		}
		for k, v := range want[i] {
			if got[k] != v {
				t.Errorf("event %s: %s = %v, want %v", ev.Name, k, got[k].String(), v.String())
			}
		}
	}
}
