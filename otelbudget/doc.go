// Package otelbudget reports budgets to OpenTelemetry: an [Observer] that
// turns the events of every budget (arrivals, attempts, refusals, queue
// waits, hedges, detached and orphaned work) into metrics, and annotates the
// span of the request each event belongs to.
//
// # Metrics
//
// Times are histograms in seconds with bucket boundaries from 100 µs to a
// minute, set as the instruments' explicit bucket boundaries advice (a view
// can still override them). Counters count refusals by reason, expiries,
// hedges, queue drops, detached work, orphaned work, and replicas a
// balancer ejected and took back (budget.EventEject and
// budget.EventRecover, whose stage names the replica). The names are the
// ones listed on [Observer]; through the OpenTelemetry Prometheus exporter
// they become budget_remaining_seconds, budget_refusals_total and so on.
//
// The metrics are specific to budgets: the observer records no HTTP or gRPC
// request counts or latencies, so it runs beside otelhttp and otelgrpc
// without counting anything twice.
//
// # Cardinality
//
// The attribute keys are stage, event, outcome and reason, and nothing else:
// never a path, a header, a user or any other request data. event, outcome
// and reason take values from closed lists (budget.EventKind and
// budget.Outcome labels, plus skew and malformed). stage comes from code —
// an Op's name, a handler's stage, a queue's name — but an adapter may put a
// request's host in it (httpbudget's Transport names local refusals after
// the host unless given a stage), so the observer reports only the first
// [DefaultStageLimit] distinct stage names it sees (see [WithStageLimit])
// and every later one as "other", holding a quarter of them for the names
// of Ops and queues, which a name derived from a request never displaces.
// The number of series is therefore bounded by the stage limit times a
// small constant, whatever the traffic.
//
// # Traces
//
// For each event whose context carries a recording span, the observer adds
// a span event named "budget.<kind>" ("budget.arrival", "budget.attempt",
// "budget.refuse", ...) with the ledger entry's stage, offset, remaining
// time, duration, estimate, outcome and attempt number as attributes, so the
// span shows the same waterfall the ledger does: budget.stage,
// budget.offset_ms and budget.remaining_ms always; budget.duration_ms,
// budget.needed_ms, budget.outcome, budget.attempt and budget.probe when
// set; budget.reason on an event that refused work or a deadline header. An arrival sets the span
// attributes budget.remaining_ms and budget.stage; a refusal sets
// budget.refusal.stage and budget.refusal.reason, so a refused call is
// visible, and searchable, in the trace it belongs to. [SetSource] adds
// budget.source.
//
// # Exemplars
//
// Every measurement is made with the event's context. When that context
// carries a sampled span, the OpenTelemetry metric SDK (with its default
// trace-based exemplar filter) attaches an exemplar holding the trace and
// span IDs, which links a refusal or an expiry on a dashboard to the trace
// in which it happened. The Prometheus exporter exposes exemplars in the
// OpenMetrics format.
//
// # Baggage: a deadline through services that run no budget code
//
// [Propagator] carries the request's deadline in W3C baggage, which every
// OpenTelemetry-instrumented service forwards in every language, so a
// request that crosses a service instrumented with otelhttp or otelgrpc
// alone still carries its budget. Install it in place of
// propagation.Baggage in the services that run this library; the others
// keep the standard propagators.
//
// The wire format, for other implementations: one baggage list-member with
// the key "budget-deadline" (see [BaggageKey]) whose value is the absolute
// deadline on the sender's wall clock in Unix milliseconds, rounded down,
// as 1 to 15 ASCII digits with no sign, space or unit, and no properties,
// for example
//
//	baggage: userid=42,budget-deadline=1767225600123
//
// A sender writes the deadline it waits until, replacing any member it
// received. A receiver reads the value exactly as the Request-Deadline
// header: it counts only when the receiver's policy trusts Request-Deadline;
// a value further in the past than the skew threshold (250 ms by default)
// says the clocks disagree and is ignored; a value in the past within the
// threshold means the request expired; a value later than the policy's
// Max is clamped to it; anything else (signs, units, fractions, more than
// 15 digits) is malformed, ignored and counted, or refused under a strict
// policy. A receiver removes the member from the baggage it passes on and
// writes its own deadline instead.
//
// Baggage travels further than headers: a public edge that runs otelhttp
// but not this library forwards whatever a client put in the baggage. The
// propagator's policy ([WithPolicy]) is its own, so a service can read the
// headers under one policy and the baggage under a stricter one (a Max, or
// Trust without [wire.SourceRequestDeadline] to ignore the member), and an
// edge that runs this library drops a client's member by reading it under
// a policy that trusts [wire.SourcesNone]. A member can only shorten a
// request's time or ask for up to Max; it never lifts a deadline the
// server's own adapter sets.
//
// The request's class travels beside it, when it is not the default, as the
// member "budget-criticality" (see [BaggageCriticalityKey]) with the value
// "critical" or "sheddable" ("default" is also read), read under the rule of
// the Request-Criticality header: it counts only when the receiver's policy
// trusts that header, and a malformed value is ignored and counted, or
// refused under a strict policy.
//
//	baggage: userid=42,budget-deadline=1767225600123,budget-criticality=critical
package otelbudget
