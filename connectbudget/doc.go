// Package connectbudget carries a request's budget across connect-go
// (connectrpc.com/connect), for the Connect, gRPC and gRPC-Web protocols.
//
// On the server, [NewServerInterceptor] applies an inbound [wire.Policy]
// that connect-go alone cannot: a maximum a client may ask for, a default
// for calls that carry no deadline, a minimum below which calls are shed on
// arrival, the set of trusted sources, a reserve for writing the response,
// and strict or lenient treatment of malformed values. Every trusted source
// counts (Connect-Timeout-Ms, grpc-timeout, Request-Timeout-Ms,
// Request-Deadline, ...) and the strictest wins. A refused call never
// reaches its handler; an admitted one runs with the budget and its ledger
// in its context. A [wire.Switch] lets an operator change the policy at run
// time.
//
// On the client, [NewClientInterceptor] refuses, without a network call,
// calls that cannot finish in the time left, and sends that time: in the
// protocol's own header, which connect-go writes from the context's
// deadline, and as this library's Request-Timeout-Ms and Request-Deadline.
//
// Per-procedure admission ([edge.WithAdmission]) runs calls as attempts of a
// [budget.Op] on either side, so a procedure whose measured latency cannot
// fit in what is left is refused before it starts.
//
// # Criticality
//
// A call's class ([budget.Criticality]) travels beside its deadline in the
// Request-Criticality header, for all three protocols. The server
// interceptor puts on the handler's context the class of a trusted header,
// else of its classifier ([WithClassifier]), else the class the context
// already carries (otelbudget's baggage propagator's, say), else the
// policy's Criticality; admission ([edge.WithAdmission], [WithMessageAdmission])
// then refuses sheddable work first under a shortage. The client
// interceptor sends the context's class when it is not the default. An edge
// whose policy trusts [wire.SourcesNone] ignores the class a client sends,
// as it ignores its deadline.
//
// # Streams
//
// Without options a stream runs under one deadline, the whole call's: a
// stream that answers messages for an hour needs an hour-long deadline, and
// a peer that stops sending is found only when it ends. Three options bound
// the parts of a stream instead. [WithMessageBudget] gives each message a
// budget of its own: on the server each received message is handled in a
// context ([MessageContext]) that ends at the earlier of the stream's
// deadline and the message's budget, so one message that hangs is given up
// while the next ones are still answered; on the client each Send and
// Receive may take at most the budget, or the stream ends. A client may send
// its per-message budget in [HeaderMessageTimeout], which a server honours
// under its policy's trust rule. [WithMessageAdmission] admits each
// message by a [budget.Op] that learns how long one takes to handle, and
// refuses, before the handler starts on it, a message whose time cannot
// cover that. [WithIdleTimeout] ends a stream whose peer sends nothing for
// the timeout, with DeadlineExceeded, an error matching
// [ErrIdle], and a ledger event naming the side that went quiet.
//
// [CodeOf] maps errors to Connect codes, in one place. Refusals for lack of
// time and expiries are DeadlineExceeded, malformed deadline values under a
// strict policy InvalidArgument, and a Canceled that comes after the
// deadline has passed is reported as DeadlineExceeded.
//
// # Retries that neither multiply nor duplicate
//
// The client interceptor classifies every error by how far the call got
// ([budget.SentOf]: not sent, refused on arrival, maybe executed,
// executed), so that [budget.Retry] repeats a call that may have run only
// when it is idempotent or carries an idempotency key, and sends the key of
// [budget.WithIdempotencyKey] as the Idempotency-Key header on every
// attempt and hedge. On the server, [NewIdempotentInterceptor] runs a unary
// handler at most once per key on an idempotency.Store and replays the
// first answer to the repeats. A server that shed a call on arrival, or
// whose handler gave up after its own retries, answers with the
// Budget-No-Retry header ([wire.HeaderBudgetNoRetry]), and the client makes
// of it an error [budget.Retry] does not retry: retries happen at the hop
// nearest the failure.
//
// This module requires connectrpc.com/connect; the budget module itself
// depends only on the standard library.
package connectbudget
