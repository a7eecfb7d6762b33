package otelbudget

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/timebudget/budget"
)

// ScopeName is the instrumentation scope of the observer's meter.
const ScopeName = "github.com/timebudget/budget/otelbudget"

// secondsBuckets are the histogram bucket boundaries for times, in seconds:
// from 100 µs, the smallest time worth sending to another process, to a
// minute, longer than any interactive budget. Below 10 ms they are dense
// because that is where refusals for lack of time are decided.
var secondsBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// fractionBuckets are the bucket boundaries of budget.used: the fraction of a
// request's budget one attempt used, past 1 for work that overran it.
var fractionBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.5, 2}

// Observer is a [budget.Observer] that records budgets as OpenTelemetry
// metrics and annotates the span of each event's context. Set it as
// [budget.Config.Observer], as an Op's Observer, or pass it to an adapter
// ([github.com/timebudget/budget/edge.WithObserver]).
//
// Metrics (attribute keys in braces; see the package documentation for the
// rules):
//
//	budget.remaining    histogram, s  {stage, event}    time left at arrival and when each attempt or fallback started
//	budget.queue.wait   histogram, s  {stage, outcome}  time an item waited in a budget.Queue
//	budget.used         histogram, 1  {stage, outcome}  fraction of the request's budget one attempt used
//	budget.refusals     counter       {stage, reason}   work not started (reason: expired, insufficient, shed, retry_suppressed, canceled) and deadline headers ignored (skew, malformed)
//	budget.expiries     counter       {stage}           attempts that ran out of time
//	budget.hedges       counter       {stage}           hedged second attempts started
//	budget.queue.drops  counter       {stage, reason}   queue items dropped instead of handed out
//	budget.detached     counter       {stage}           work detached to run after the answer
//	budget.orphaned     counter       {stage}           attempts that ended after their caller's deadline had passed
//	budget.ejections    counter       {stage, event}    replicas a balancer ejected (event eject) and took back (recover); stage names the replica
//
// budget.used needs the request's whole budget, which the request's ledger
// holds: it is not recorded for budgets started with the ledger disabled.
// Every measurement is made with the event's context, so the SDK can attach
// an exemplar linking the sample to the sampled trace it belongs to.
//
// An Observer is safe for concurrent use. Observing an event costs a map
// lookup of its stage and one to four instrument calls (0.2 to 0.9 µs with
// the SDK, see BENCHMARKS.md) and allocates nothing once the stage's attribute
// sets exist; annotating a recording span costs what the tracing SDK charges
// for a span event (about 2 µs and 6 allocations).
type Observer struct {
	remaining  metric.Float64Histogram
	queueWait  metric.Float64Histogram
	used       metric.Float64Histogram
	refusals   metric.Int64Counter
	expiries   metric.Int64Counter
	hedges     metric.Int64Counter
	queueDrops metric.Int64Counter
	detached   metric.Int64Counter
	orphaned   metric.Int64Counter
	ejections  metric.Int64Counter

	stages *stages
	grace  time.Duration
	spans  bool
}

var _ budget.Observer = (*Observer)(nil)

// NewObserver creates the instruments and returns an Observer that records
// to them. It fails only when the meter provider refuses an instrument; the
// error names it.
func NewObserver(opts ...Option) (*Observer, error) {
	cfg := config{stageLimit: DefaultStageLimit, orphanGrace: 5 * time.Millisecond, spans: true}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.provider == nil {
		cfg.provider = otel.GetMeterProvider()
	}
	o := &Observer{stages: newStages(cfg.stageLimit), grace: cfg.orphanGrace, spans: cfg.spans}
	if err := o.instruments(cfg.provider.Meter(ScopeName)); err != nil {
		return nil, err
	}
	return o, nil
}

// instruments creates the observer's instruments from one table each of
// histograms and counters, so that a metric is one row; it fails on the
// first the meter refuses, naming it.
func (o *Observer) instruments(m metric.Meter) error {
	histograms := [...]struct {
		to         *metric.Float64Histogram
		name, unit string
		bounds     []float64
		desc       string
	}{
		{&o.remaining, "budget.remaining", "s", secondsBuckets,
			"Time left before the deadline when a request arrived and when each attempt started."},
		{&o.queueWait, "budget.queue.wait", "s", secondsBuckets,
			"Time an item waited in a deadline-aware queue."},
		{&o.used, "budget.used", "1", fractionBuckets,
			"Fraction of the request's budget one attempt used."},
	}
	counters := [...]struct {
		to               *metric.Int64Counter
		name, unit, desc string
	}{
		{&o.refusals, "budget.refusals", "{refusal}",
			"Work not started for lack of time, and deadline headers ignored, by reason."},
		{&o.expiries, "budget.expiries", "{attempt}", "Attempts that ran out of time."},
		{&o.hedges, "budget.hedges", "{attempt}", "Hedged second attempts started."},
		{&o.queueDrops, "budget.queue.drops", "{item}",
			"Queue items dropped instead of handed out, by reason."},
		{&o.detached, "budget.detached", "{task}", "Work detached to run after the answer."},
		{&o.orphaned, "budget.orphaned", "{attempt}",
			"Attempts still running after their caller's deadline had passed."},
		{&o.ejections, "budget.ejections", "{replica}",
			"Replicas a balancer ejected (event eject) and took back (event recover)."},
	}
	var err error
	for _, h := range histograms {
		*h.to, err = m.Float64Histogram(h.name, metric.WithUnit(h.unit), metric.WithDescription(h.desc),
			metric.WithExplicitBucketBoundaries(h.bounds...))
		if err != nil {
			return fmt.Errorf("otelbudget: creating histogram %s: %w", h.name, err)
		}
	}
	for _, c := range counters {
		if *c.to, err = m.Int64Counter(c.name, metric.WithUnit(c.unit), metric.WithDescription(c.desc)); err != nil {
			return fmt.Errorf("otelbudget: creating counter %s: %w", c.name, err)
		}
	}
	return nil
}

// Observe records ev. It implements [budget.Observer]. A nil *Observer
// records nothing; a nil ctx counts as context.Background().
func (o *Observer) Observe(ctx context.Context, ev budget.Event) {
	if o == nil {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	o.measure(ctx, ev)
	if o.spans {
		annotate(ctx, ev)
	}
}

// workEvent reports whether events of kind k come from work the code runs
// (an Op, a queue, detached work), whose stage is always a name from code,
// rather than from a boundary, whose stage an adapter may derive from the
// request.
func workEvent(k budget.EventKind) bool {
	switch k {
	case budget.EventAttempt, budget.EventFallback, budget.EventHedge, budget.EventQueue, budget.EventDetach:
		return true
	}
	return false
}

// measure records ev's metrics.
func (o *Observer) measure(ctx context.Context, ev budget.Event) {
	st := o.stages.get(ev.Stage, workEvent(ev.Kind))
	switch ev.Kind {
	case budget.EventArrival:
		o.remaining.Record(ctx, ev.Remaining.Seconds(), st.at(atArrival).rec...)
	case budget.EventAttempt, budget.EventFallback:
		o.attempt(ctx, st, ev)
	case budget.EventRefuse:
		o.refusals.Add(ctx, 1, st.refusal(outcomeSlot(ev.Outcome)).add...)
	case budget.EventSkew:
		o.refusals.Add(ctx, 1, st.refusal(reasonSkew).add...)
	case budget.EventMalformed:
		o.refusals.Add(ctx, 1, st.refusal(reasonMalformed).add...)
	case budget.EventHedge:
		o.hedges.Add(ctx, 1, st.stage().add...)
	case budget.EventQueue:
		o.queueWait.Record(ctx, ev.Duration.Seconds(), st.waitBy(ev.Outcome).rec...)
		if ev.Outcome != budget.OutcomeOK {
			o.queueDrops.Add(ctx, 1, st.dropBy(ev.Outcome).add...)
		}
	case budget.EventDetach:
		o.detached.Add(ctx, 1, st.stage().add...)
	case budget.EventEject, budget.EventRecover:
		o.ejections.Add(ctx, 1, st.balanceBy(ev.Kind).add...)
	}
}

// attempt records an attempt or a fallback rung that ran.
func (o *Observer) attempt(ctx context.Context, st *stageSet, ev budget.Event) {
	if ev.Remaining > 0 {
		at := atAttempt
		if ev.Kind == budget.EventFallback {
			at = atFallback
		}
		o.remaining.Record(ctx, ev.Remaining.Seconds(), st.at(at).rec...)
		if ev.Duration > ev.Remaining+o.grace {
			o.orphaned.Add(ctx, 1, st.stage().add...)
		}
	}
	if total := budget.LedgerFrom(ctx).Budget(); total > 0 {
		o.used.Record(ctx, float64(ev.Duration)/float64(total), st.usedBy(ev.Outcome).rec...)
	}
	if ev.Outcome == budget.OutcomeExpired {
		o.expiries.Add(ctx, 1, st.stage().add...)
	}
}
