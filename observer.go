package budget

import (
	"context"
	"log/slog"
)

// Observer receives the events of a budget as they happen: arrival, admission
// and refusal, the end of each attempt, suppressed retries, queue drops and
// expiry. Implementations must be safe for concurrent use and should return
// quickly; they run on the request's goroutine. The otelbudget module provides
// one that feeds OpenTelemetry metrics and spans.
type Observer interface {
	Observe(ctx context.Context, ev Event)
}

// ObserverFunc adapts a function to the [Observer] interface.
type ObserverFunc func(ctx context.Context, ev Event)

// Observe calls f(ctx, ev).
// A nil ObserverFunc observes nothing.
func (f ObserverFunc) Observe(ctx context.Context, ev Event) {
	if f != nil {
		f(ctx, ev)
	}
}

// SlogObserver returns an [Observer] that logs each event to l: refusals,
// anything that expired (an attempt that ran out of time, a queue item that
// expired while it waited), anything shed or refused for lack of time, and
// skewed or malformed deadline headers at level Warn; everything else at
// Debug. A nil l uses slog.Default(). Attribute keys: kind, stage, offset,
// duration, remaining, needed, outcome, attempt, probe, err.
func SlogObserver(l *slog.Logger) Observer {
	if l == nil {
		l = slog.Default()
	}
	return slogObserver{l}
}

type slogObserver struct{ l *slog.Logger }

func (o slogObserver) Observe(ctx context.Context, ev Event) {
	level := slog.LevelDebug
	switch {
	case ev.Kind == EventRefuse, ev.Kind == EventSkew, ev.Kind == EventMalformed,
		ev.Outcome == OutcomeExpired, ev.Outcome == OutcomeShed, ev.Outcome == OutcomeInsufficient:
		level = slog.LevelWarn
	}
	if !o.l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 9)
	attrs = append(attrs,
		slog.String("kind", ev.Kind.String()),
		slog.String("stage", ev.Stage),
		slog.Duration("offset", ev.Offset),
		slog.Duration("remaining", ev.Remaining))
	if ev.Duration != 0 {
		attrs = append(attrs, slog.Duration("duration", ev.Duration))
	}
	if ev.Needed != 0 {
		attrs = append(attrs, slog.Duration("needed", ev.Needed))
	}
	if ev.Outcome != OutcomeNone {
		attrs = append(attrs, slog.String("outcome", ev.Outcome.String()))
	}
	if ev.Probe {
		attrs = append(attrs, slog.Bool("probe", true))
	}
	if ev.Attempt != 0 {
		attrs = append(attrs, slog.Int("attempt", ev.Attempt))
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.String("err", ev.Err.Error()))
	}
	o.l.LogAttrs(ctx, level, "budget "+ev.Kind.String(), attrs...)
}

// Observers returns an [Observer] that hands each event to every observer
// of obs in turn, skipping nil ones: one set of events for a debug page and
// for metrics, say. It returns nil when obs holds no observer, and the
// observer itself when it holds one. The result is safe for concurrent use
// when each observer is.
func Observers(obs ...Observer) Observer {
	var list multiObserver
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return list
}

type multiObserver []Observer

func (m multiObserver) Observe(ctx context.Context, ev Event) {
	for _, o := range m {
		o.Observe(ctx, ev)
	}
}
