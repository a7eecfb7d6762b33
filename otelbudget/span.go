package otelbudget

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/timebudget/budget"
)

// Span attribute keys.
const (
	// AttrRemainingMS is the time left, in milliseconds: on the span, when
	// the request's budget started; on a span event, when the event began.
	AttrRemainingMS = attribute.Key("budget.remaining_ms")
	// AttrStage names the boundary that started the budget (on the span) or
	// the stage an event belongs to (on a span event).
	AttrStage = attribute.Key("budget.stage")
	// AttrSource names the deadline header that set the budget, when the
	// code that decided the policy reports it with [SetSource].
	AttrSource = attribute.Key("budget.source")
	// AttrRefusalStage and AttrRefusalReason name the stage and the reason
	// of the latest refusal in the span, so a trace search can find
	// refused requests without reading events.
	AttrRefusalStage  = attribute.Key("budget.refusal.stage")
	AttrRefusalReason = attribute.Key("budget.refusal.reason")
	// AttrCriticality is the request's class, "critical", "default" or
	// "sheddable" ([budget.CriticalityFrom]), set on the span when the
	// request's budget starts.
	AttrCriticality = attribute.Key("budget.criticality")
)

// ms renders d in milliseconds with microsecond resolution.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// annotate adds ev to the span of ctx, when that span is recording: each
// event becomes a span event named "budget.<kind>" (one per ledger entry,
// with the ledger's numbers as the attributes the package doc lists, whose
// event-only keys are written here, where they are set, and nowhere else),
// an arrival also sets the span's budget attributes, and a refusal sets the
// refusal attributes, so a refused call is visible in the trace it belongs
// to.
func annotate(ctx context.Context, ev budget.Event) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 9)
	attrs = append(attrs, AttrStage.String(ev.Stage), attribute.Float64("budget.offset_ms", ms(ev.Offset)),
		AttrRemainingMS.Float64(ms(ev.Remaining)))
	if ev.Duration != 0 {
		attrs = append(attrs, attribute.Float64("budget.duration_ms", ms(ev.Duration)))
	}
	if ev.Needed != 0 {
		attrs = append(attrs, attribute.Float64("budget.needed_ms", ms(ev.Needed)))
	}
	if ev.Outcome != budget.OutcomeNone {
		attrs = append(attrs, attribute.String("budget.outcome", ev.Outcome.String()))
	}
	if ev.Attempt != 0 {
		attrs = append(attrs, attribute.Int("budget.attempt", ev.Attempt))
	}
	if ev.Probe {
		attrs = append(attrs, attribute.Bool("budget.probe", true))
	}
	if reason, ok := refusalReason(ev); ok {
		attrs = append(attrs, attribute.String("budget.reason", reason))
		span.SetAttributes(AttrRefusalStage.String(ev.Stage), AttrRefusalReason.String(reason))
	}
	if ev.Kind == budget.EventArrival {
		span.SetAttributes(AttrRemainingMS.Float64(ms(ev.Remaining)), AttrStage.String(ev.Stage),
			AttrCriticality.String(budget.CriticalityFrom(ctx).String()))
	}
	at := ev.At
	if at.IsZero() {
		at = time.Now()
	}
	span.AddEvent(eventName(ev.Kind), trace.WithAttributes(attrs...), trace.WithTimestamp(at))
}

// eventNames are the span event names, built once.
var eventNames = func() []string {
	names := make([]string, budget.EventMalformed+1)
	for k := range names {
		names[k] = "budget." + budget.EventKind(k).String()
	}
	return names
}()

func eventName(k budget.EventKind) string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return "budget." + k.String()
}

// refusalReason returns the reason label of an event that refused work or a
// deadline header.
func refusalReason(ev budget.Event) (string, bool) {
	switch ev.Kind {
	case budget.EventRefuse:
		return ev.Outcome.String(), true
	case budget.EventSkew:
		return "skew", true
	case budget.EventMalformed:
		return "malformed", true
	}
	return "", false
}

// SetSource records on the span of ctx which deadline header set the
// request's budget, as the budget.source attribute. Budget events do not say
// which header a deadline came from, so code that knows it (from
// wire.Decision.SourceName) reports it here. It does nothing when the span is
// not recording or source is empty.
func SetSource(ctx context.Context, source string) {
	if source == "" {
		return
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(AttrSource.String(source))
	}
}
