// Package grpcbudget carries a request's budget across gRPC.
//
// On the server, [UnaryServerInterceptor] and [StreamServerInterceptor] apply
// an inbound [wire.Policy] that grpc-go alone cannot: a maximum a client may
// ask for, a default for calls that carry no deadline, a minimum below which
// calls are shed on arrival, the set of trusted sources, a reserve for
// writing the response, and strict or lenient treatment of malformed values.
// Every trusted source counts (grpc-timeout, Request-Timeout-Ms,
// Request-Deadline, ...) and the strictest wins. A refused call never reaches
// its handler; an admitted one runs with the budget and its ledger in its
// context. A [wire.Switch] lets an operator change the policy at run time.
//
// On the client, [UnaryClientInterceptor] and [StreamClientInterceptor]
// refuse, without a network call, calls that cannot finish in the time left,
// and send that time as grpc-timeout (and optionally as this library's
// metadata).
//
// Per-method admission ([edge.WithAdmission]) runs calls as attempts of a
// [budget.Op] on either side, so a method whose measured latency cannot fit
// in what is left is refused before it starts.
//
// [CodeOf] maps errors to status codes, in one place. Refusals for lack of time
// and expiries are DEADLINE_EXCEEDED, malformed deadline values under a strict
// policy INVALID_ARGUMENT, and a CANCELLED that comes after the deadline has
// passed is reported as DEADLINE_EXCEEDED.
//
// The budget_aware balancer ([BalancerName]), chosen in a service config,
// sends each call to a replica likely to answer within the call's deadline,
// ejecting replicas much slower than the others and probing them until they
// recover.
//
// # Streams: a budget per message
//
// A stream's deadline (grpc-timeout, bounded by the policy's Max) bounds
// the whole stream, however many messages it carries, and its end ends the
// stream: grpc-go can cancel only a whole RPC. [WithMessageBudget] adds a
// bound per message, counted afresh from each message's arrival: on the
// server, [EachMessage] (or [MessageContext] after each Recv) handles each
// message under the earlier of the stream's deadline and the per-message
// budget, and a message that outlives its budget ends alone, its context's
// cause [ErrMessageBudget], while the stream and the next messages go on.
// A client sends its per-message budget under [MessageTimeoutKey], and the
// server takes it, when smaller than its own, under the policy's trust rule
// (as Request-Timeout-Ms) and clamped to Max; the client's own SendMsg and
// RecvMsg wait at most that long, and a wait past it ends the stream with
// DEADLINE_EXCEEDED. [WithIdleTimeout] ends a stream whose peer sends
// nothing for a while, on either side, with DEADLINE_EXCEEDED saying
// "client idle" or "server idle" and a ledger entry of that stage.
// [WithMessageOp] admits each message with a [budget.Op].
//
// # Retries that neither multiply nor duplicate
//
// The client interceptors classify every error by how far the call got
// ([budget.SentOf]: not sent, refused on arrival, maybe executed,
// executed), so that [budget.Retry] repeats a call that may have run only
// when it is idempotent or carries an idempotency key, and send the key of
// [budget.WithIdempotencyKey] as [IdempotencyKeyKey] metadata on every
// attempt and hedge. On the server, [IdempotentUnaryServerInterceptor] runs
// a handler at most once per key on an idempotency.Store and replays the
// first answer to the repeats. A server that shed a call on arrival, or
// whose handler gave up after its own retries, answers with the
// budget-no-retry trailer ([wire.HeaderBudgetNoRetry]), and the client
// makes of it an error [budget.Retry] does not retry: retries happen at
// the hop nearest the failure.
//
// This module requires google.golang.org/grpc; the budget module itself
// depends only on the standard library.
package grpcbudget
