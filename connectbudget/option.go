package connectbudget

import (
	"context"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// ServerOption configures [NewServerInterceptor].
type ServerOption = edge.ServerOption[serverConfig]

// ClientOption configures [NewClientInterceptor].
type ClientOption = edge.ClientOption[clientConfig]

// Option configures both sides: it is a [ServerOption] and a [ClientOption].
type Option = edge.Option[serverConfig, clientConfig]

type serverConfig struct {
	edge.ServerSettings
	message time.Duration
	idle    time.Duration

	messageOps func(procedure string) *budget.Op
	classify   func(ctx context.Context, procedure string) budget.Criticality // see WithClassifier
}

type clientConfig struct {
	edge.ClientSettings
	transit   time.Duration
	minUseful time.Duration
	message   time.Duration
	idle      time.Duration
	stage     string
}

type (
	serverOption = edge.ServerFunc[serverConfig]
	clientOption = edge.ClientFunc[clientConfig]
	bothOption   = edge.Both[serverConfig, clientConfig]
)

// WithPolicy sets a fixed inbound policy. The default is the zero
// [wire.Policy]: trust the default sources (Connect-Timeout-Ms and
// grpc-timeout among them) with no cap, impose no deadline on calls that
// carry none, refuse only calls whose deadline has passed; that suits a
// service behind a trusted edge, not the edge itself (see
// [NewServerInterceptor]). A nil policy turns enforcement off. Use
// [WithSwitch] to change it at run time.
//
// A policy that [wire.Policy.Validate] rejects (a negative value, a Min that
// would shed every call) is a setup mistake: [NewServerInterceptor] panics
// with an error matching [budget.ErrMisconfigured] and [wire.ErrInvalidPolicy]
// that names the field, before any call is served. Call Validate first to
// handle the mistake as an error instead.
func WithPolicy(p *wire.Policy) ServerOption {
	return serverOption(func(c *serverConfig) { c.Policy = edge.PolicySwitch("connectbudget", p) })
}

// WithSwitch makes the interceptor load its inbound policy from s for each
// call: storing a policy in s changes what a running server enforces (nil
// turns enforcement off), and [wire.Switch.Store] keeps the running policy
// when the new one is invalid. A nil s means the default policy.
func WithSwitch(s *wire.Switch) ServerOption {
	return serverOption(func(c *serverConfig) { c.Policy = s })
}

// WithStage names the stage that starts each call's budget, as the ledger
// and refusals report it. The default is the call's procedure, such as
// "/acme.v1.CheckoutService/Pay".
func WithStage(name string) ServerOption {
	return serverOption(func(c *serverConfig) { c.Stage = name })
}

// WithObserver sends the events of each call's budget to o, those of a call
// refused before its handler ran included. Without it, no observer.
func WithObserver(o budget.Observer) ServerOption {
	return serverOption(func(c *serverConfig) { c.Observer = o })
}

// WithLedgerCapacity sets how many events a call's ledger holds (64 unless
// set; see [budget.Config]); n below zero means no ledger at all.
func WithLedgerCapacity(n int) ServerOption {
	return serverOption(func(c *serverConfig) { c.LedgerCapacity = n })
}

// WithAnswerMargin sets the answer margin of the server interceptor: time
// held back from the handler's deadline so that, when the handler runs out
// of budget, DeadlineExceeded reaches the caller before the caller's own
// deadline. The handler's deadline is the caller's less the larger of the
// margin and the policy's AnswerMargin.
//
// The default (zero) is adaptive: 1 ms plus four times a peak-following
// average of how late, after a handler's deadline, handlers return, at most
// 10 ms. A positive d is a fixed margin; a negative d holds back nothing but
// AnswerMargin. Either way the margin is at most 1/10 of the caller's time left.
func WithAnswerMargin(d time.Duration) ServerOption {
	return serverOption(func(c *serverConfig) { c.Margin = d })
}

// WithAdmission gives procedures a [budget.Op] each: lookup returns the op
// of a procedure ("/pkg.Service/Method"), or nil for a procedure without
// one. [Ops] turns a map into a lookup. The default is no admission.
//
// On the server, a call to a procedure with an op runs its handler as one
// attempt of the op: the op measures the handler's latency, and a call
// whose remaining budget the measurements say it cannot fit is refused
// before the handler runs, with DeadlineExceeded. On the client, the same
// happens before anything is sent: a refused call makes no network call.
// Streams are admitted the same way, but a stream's lifetime is not a
// latency, so on the client a stream's op decides without learning, and on
// the server the handler's whole run is the sample.
func WithAdmission(lookup func(procedure string) *budget.Op) Option {
	return edge.WithAdmission[serverConfig, clientConfig](lookup)
}

// Ops maps procedures to their ops. Its Op method is a lookup for
// [WithAdmission]: WithAdmission(connectbudget.Ops{"/pkg.Svc/Get": getOp}.Op).
type Ops = edge.Ops

// WithMessageBudget sets the per-message budget of streams.
//
// On the server, each message the handler receives gets a context of its
// own, returned by [MessageContext], whose deadline is the earlier of the
// stream's deadline and d after the message was received: a handler that
// hangs on one message gives that message up at its budget and goes on with
// the next, while the stream lives on. A caller may ask for a shorter
// per-message budget with the Request-Message-Timeout-Ms header
// ([HeaderMessageTimeout]) when the inbound policy trusts Request-Timeout-Ms;
// it never gets a longer one than d, and the handler gives up a tenth
// before the caller's value, so that the answer reaches it in time.
// With d zero or negative, only a trusted caller's value sets one.
//
// On the client, each Send and Receive of a stream may take at most d: one
// that takes longer ends the whole stream with DeadlineExceeded, since a
// Connect, gRPC or gRPC-Web stream cannot cancel one message alone. A
// Receive's time counts only while the client awaits an answer (a message it
// sent is unanswered, or it closed its request); its own pauses do not. The
// client also sends d to the server as Request-Message-Timeout-Ms.
//
// Unary calls are not affected: their budget is the call's deadline. The
// default is none.
func WithMessageBudget(d time.Duration) Option {
	d = max(d, 0)
	return bothOption{
		Server: func(c *serverConfig) { c.message = d },
		Client: func(c *clientConfig) { c.message = d },
	}
}

// WithMessageAdmission gives the messages of a procedure's streams a
// [budget.Op] each, on the server: lookup returns the op of a procedure, or
// nil. Each received message is one attempt of the op, from its receipt
// until the handler asks for the next message (or returns), so the op
// learns how long a message takes to handle. A message the op's
// measurements say cannot be handled in its time (the per-message budget,
// or what is left of the stream's) is refused: its context
// ([MessageContext]) is over before the handler sees it, with a cause
// matching [budget.ErrInsufficient], and the handler should skip it. An
// admitted message's context is also bounded by the op's Cap. This is
// apart from [WithAdmission], which admits the whole stream. The default
// is none.
func WithMessageAdmission(lookup func(procedure string) *budget.Op) ServerOption {
	return serverOption(func(c *serverConfig) { c.messageOps = lookup })
}

// WithIdleTimeout ends a stream whose peer sends nothing for d: a Receive
// that waits d for the next message ends the stream with DeadlineExceeded
// and an error matching [ErrIdle] and [context.DeadlineExceeded], and the
// call's ledger gets an event naming the side that went quiet. On the
// server that is the client (the handler's Receive returns the error, and
// the call ends with it); on the client it is the server (the stream is
// canceled), and a Receive waits for it only while the client awaits an
// answer, as for [WithMessageBudget]. Time spent between Receive calls
// does not count: only waiting does. The default is none: a stream lives until its
// deadline, however quiet.
//
// On the server, a Receive that is waiting cannot be interrupted (net/http
// offers no way from an interceptor), so it is left to end with the
// request: over HTTP/2 the stream's answer leaves at once, while over
// HTTP/1.1, where the request body holds the connection, net/http sends it
// only once the client sends more or closes the body. The handler has
// stopped either way. The message its waiting Receive was given must not
// be used.
func WithIdleTimeout(d time.Duration) Option {
	d = max(d, 0)
	return bothOption{
		Server: func(c *serverConfig) { c.idle = d },
		Client: func(c *clientConfig) { c.idle = d },
	}
}

// WithTransit sets the transit allowance taken off the time left before a
// call is sent, so the callee does not count on time the call spends on the
// wire. The call's context gets a deadline that much earlier, and
// connect-go sends that. The default is zero: the callee's skew check on
// Request-Deadline already charges transit when clocks agree.
func WithTransit(d time.Duration) ClientOption {
	return clientOption(func(c *clientConfig) { c.transit = max(d, 0) })
}

// WithMinUseful sets the least time worth sending a call with; below it the
// call is refused locally, without a network call, with an error matching
// [budget.ErrInsufficient] and carrying DeadlineExceeded. The default is one
// millisecond.
func WithMinUseful(d time.Duration) ClientOption {
	return clientOption(func(c *clientConfig) { c.minUseful = max(d, time.Millisecond) })
}

// WithClientStage names the stage of the client's local refusals in errors
// and the ledger, as httpbudget's WithClientStage does. The default is the
// call's procedure ("/pkg.Service/Method"); a name is what a dashboard should
// show when the method names say too much or too little.
func WithClientStage(name string) ClientOption {
	return clientOption(func(c *clientConfig) { c.stage = name })
}

// stageOf is the stage of a call to method, named as the server side names
// its stages ([edge.Named]).
func (c *clientConfig) stageOf(method string) string { return edge.Named(c.stage, method) }
