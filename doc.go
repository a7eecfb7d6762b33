// Package budget gives a request one deadline, spends it down across every hop,
// and refuses to start work that cannot finish, so a slow failure costs one
// budget rather than several.
//
// A budget lives in a [context.Context]. [Start] fixes the deadline at the
// boundary whose latency is promised; it is clamped to any deadline the parent
// already has and is never extended. Everything below reads the time left with
// [Remaining], holds some back for its own work with [WithReserve], and derives
// per-attempt contexts with [Attempt], whose deadline is the smaller of a local
// cap and what is left after the reserve. Because child budgets are ordinary
// context deadlines, code that only calls ctx.Deadline (net/http, gRPC, pgx)
// sees and enforces them without knowing about this package.
//
// An [Op] is one named dependency call. It measures the latency of that call
// with a lock-free, time-decayed [Estimator] and, before each attempt, asks
// whether the attempt can finish in the time available. When it cannot, the
// call is refused before it starts with an error matching [ErrInsufficient],
// so the caller can answer from a cheaper fallback while there is still time.
//
// Two kinds of failure are kept apart on purpose:
//
//   - An actual expiry (the deadline passed while work ran) matches
//     [context.DeadlineExceeded] with errors.Is.
//   - A predicted shortfall (the work was refused before it started) matches
//     [ErrInsufficient] and does not match [context.DeadlineExceeded].
//
// Both are reported as [*Error], which names the stage and carries the numbers
// (remaining, needed, budget) as fields for logs rather than in the message.
//
// Spending policies draw on the same budget. [Retry] retries only while the
// backoff and the op's minimum useful time still fit, and a [RetryQuota]
// shared by a client caps retries at a fraction of its requests. It does
// not repeat work that may have run: an attempt whose error says so
// ([SentOf] reports [MaybeExecuted]) is retried only for a call declared
// idempotent or carrying an idempotency key ([WithIdempotencyKey]), which
// adapters send with every attempt and hedge. Retries happen at the hop
// nearest the failure: a server whose own Retry gave up ([GaveUp]), or that
// shed the request on arrival, says so on the wire (httpbudget's
// Budget-No-Retry header), its callers' adapters mark the answer with
// [DoNotRetry], and no hop above retries it, so that hops that each allow
// three attempts do not multiply into 27 calls at the bottom. [Hedge]
// starts a second attempt at the op's latency quantile when time and the
// retry quota allow. A [Ladder] declines rungs that cannot finish while
// keeping time for its last, cheap rung. [Gather] fans out with one shared
// deadline and returns by it with what arrived. A [Queue] refuses items that
// cannot wait and still finish, drops those that expired while queued, and
// turns to newest-first under a standing queue. [Detach] and [Detacher] run
// work after the answer with a bound of its own, and [Steps] runs
// agent-style loops that stop with a partial result and a reason.
//
// Each budget carries a bounded [Ledger] that records where the time went:
// arrival, admission, attempts, backoff, queue waits, fallbacks and detached
// work, with the remaining time at each step. It renders as text, as JSON and
// as a Server-Timing header value. An [Observer] receives the same events for
// metrics and logs; [SlogObserver] writes them to a [log/slog.Logger].
//
// # Every protection lets go
//
// Each adaptive part is a control loop, and each is built to release once
// its cause is gone, within a bound that depends on ProbeEvery (100 ms by
// default) and the budgets, never on settings that would have to agree
// across services (recovery_test.go checks it over generated chains):
//
//   - [Op] admission. While an op refuses calls on its measurements, or
//     throttles them for the error rate, a probe goes at least every
//     5 × ProbeEvery (500 ms) of calls, or every 16th call for an op that
//     knows nothing of the dependency's latency; it is capped at twice the
//     usual latency, doubling after each failure up to half the call's
//     time (the sender's half: the ops below do not halve it again). A
//     probe is a probe end to end ([WithProbe]): the ops below admit it
//     whatever their own estimates say, so the first probe after the fault
//     ends reaches the dependency. Two probes that succeed end the fault
//     for the op: its cut-off samples and its throttling counts are
//     forgotten, the latencies it measured kept. So the first
//     answer after a fault comes within the longest budget in flight (a
//     probe sent just before the end runs out its time) plus 5 ×
//     ProbeEvery, or 16 calls, and the usual rate returns one probe later.
//     Over 3,000 generated chains of 1 to 5 hops, each hop with drawn
//     Priors, MinUseful, Threshold or Safety, Limit and class mix, and a
//     hang, slowness, fast errors or k of n calls hanging at a drawn hop,
//     the first answer came at most 1.36 s after the fault ended (that
//     draw's bound: 1.68 s), and within 0.56 s in all but one.
//   - What an op learned ages out: samples stand in for an empty window
//     for 30 windows (30 s) at most; the stall check holds a window after
//     the last attempt started; throttling's K is never below 1.25, so its
//     own refusals cannot hold it.
//   - Sheddable calls probe when no call of a higher class fed the op for
//     a window, so an op whose callers are all sheddable recovers as well.
//   - [Op].Limit and the classes' shares count attempts in flight, each
//     bounded by its budget: they free within the longest budget.
//   - The balancers (grpcbudget's budget_aware, httpbudget.Picker, both on
//     edge/pick) learn latency only from successes: a replica that fails
//     fast is a failure, never the fastest. A shunned replica (ejected,
//     or slower than twice the best) gets a probe in turn, one call in
//     ProbeEvery (100); it returns at its first probe that succeeds, or
//     after three fast ones if it was slow, so that once the calls it held
//     have ended it is chosen again within (3 + 2) × m × ProbeEvery calls,
//     m being the number of shunned replicas.
//   - A [Queue] with a positive Target that stands serves newest-first and
//     sheds what waited past Target; it stops standing when it is next
//     empty. A deadline-driven Queue (zero Target) holds nothing past its
//     deadline, and its learned service time follows each backlog (a
//     moving average over about eight hand-outs): once the overload ends,
//     its expected wait falls with the items it holds.
//   - A [RetryQuota] counts the requests and retries of its TTL (10 s): an
//     exhausted quota refills within a TTL of the fault's end.
//
// [Op.RegimeAt] reports which regime an op is in and since when; the debug
// page of httpbudget and the metrics of otelbudget show it.
//
// This package depends only on the standard library.
package budget
