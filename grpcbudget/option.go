package grpcbudget

import (
	"context"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// ServerOption configures [UnaryServerInterceptor] and [StreamServerInterceptor].
type ServerOption = edge.ServerOption[serverConfig]

// ClientOption configures [UnaryClientInterceptor] and [StreamClientInterceptor].
type ClientOption = edge.ClientOption[clientConfig]

// Option configures both sides: it is a [ServerOption] and a [ClientOption].
type Option = edge.Option[serverConfig, clientConfig]

type serverConfig struct {
	edge.ServerSettings
	classify func(ctx context.Context, fullMethod string) budget.Criticality // see WithClassifier
	stream   streamConfig
}

type clientConfig struct {
	edge.ClientSettings
	transit   time.Duration
	minUseful time.Duration
	metadata  bool
	stream    streamConfig
	stage     string
}

type (
	serverOption = edge.ServerFunc[serverConfig]
	clientOption = edge.ClientFunc[clientConfig]
	bothOption   = edge.Both[serverConfig, clientConfig]
)

// WithPolicy sets a fixed inbound policy. The default is the zero
// [wire.Policy]: trust the default sources (grpc-timeout among them) with no
// cap, impose no deadline on calls that carry none, refuse only calls whose
// deadline has passed; that suits a service behind a trusted edge, not the
// edge itself (see [UnaryServerInterceptor]). A nil policy turns enforcement
// off. Use [WithSwitch] to change it at run time.
//
// A policy that [wire.Policy.Validate] rejects (a negative value, a Min that
// would shed every call) is a setup mistake: the interceptor constructors
// panic with an error matching [budget.ErrMisconfigured] and
// [wire.ErrInvalidPolicy] that names the field, before any call is served.
// Call Validate first to handle the mistake as an error instead.
func WithPolicy(p *wire.Policy) ServerOption {
	return serverOption(func(c *serverConfig) { c.Policy = edge.PolicySwitch("grpcbudget", p) })
}

// WithSwitch reads the inbound policy from s on every call, so an operator
// can turn enforcement off or loosen it without a restart by storing a new
// policy in s; [wire.Switch.Store] refuses an invalid one and keeps the
// running policy. A nil s is the default policy, as if the option were not
// given.
func WithSwitch(s *wire.Switch) ServerOption {
	return serverOption(func(c *serverConfig) { c.Policy = s })
}

// WithStage names the stage that starts each call's budget, as the ledger and
// refusals report it. The default is the call's full method name, such as
// "/grpc.testing.TestService/UnaryCall".
func WithStage(name string) ServerOption {
	return serverOption(func(c *serverConfig) { c.Stage = name })
}

// WithObserver sets the observer of every call's budget, including calls
// refused on arrival. The default is none.
func WithObserver(o budget.Observer) ServerOption {
	return serverOption(func(c *serverConfig) { c.Observer = o })
}

// WithLedgerCapacity bounds the events each call's ledger keeps; see
// [budget.Config]. The default is 64 events; a negative
// value disables the ledger.
func WithLedgerCapacity(n int) ServerOption {
	return serverOption(func(c *serverConfig) { c.LedgerCapacity = n })
}

// WithAdmission gives methods an [budget.Op] each: lookup returns the op of a
// full method name ("/pkg.Service/Method"), or nil for a method without one.
// [Ops] turns a map into a lookup. The default is no admission.
//
// On the server, a call to a method with an op runs its handler as one
// attempt of the op: the op measures the handler's latency, and a call whose
// remaining budget the measurements say it cannot fit is refused before the
// handler runs, with DEADLINE_EXCEEDED. On the client, the same happens before
// anything is sent: a refused call makes no network call. Streams are
// admitted the same way, but a stream's lifetime is not a latency, so on the
// client a stream's op decides without learning (it learns from the unary
// calls that share it), and on the server the handler's whole run is the
// sample.
func WithAdmission(lookup func(fullMethod string) *budget.Op) Option {
	return edge.WithAdmission[serverConfig, clientConfig](lookup)
}

// Ops maps full method names to their ops. Its Op method is a lookup for
// [WithAdmission]: WithAdmission(grpcbudget.Ops{"/pkg.Svc/Get": getOp}.Op).
type Ops = edge.Ops

// WithTransit sets the transit allowance taken off the time left before a
// call is sent, so the callee does not count on time the call spends on the
// wire. The call's context gets a deadline that much earlier, and grpc-go
// sends that. The default is zero: with [WithBudgetMetadata] the callee's
// skew check on Request-Deadline already charges transit when clocks agree.
func WithTransit(d time.Duration) ClientOption {
	return clientOption(func(c *clientConfig) { c.transit = max(d, 0) })
}

// WithMinUseful sets the least time worth sending a call with; below it the
// call is refused locally, without a network call, with an error matching
// [budget.ErrInsufficient] and carrying DEADLINE_EXCEEDED. The default is one
// millisecond.
func WithMinUseful(d time.Duration) ClientOption {
	return clientOption(func(c *clientConfig) { c.minUseful = max(d, time.Millisecond) })
}

// WithBudgetMetadata also sends this library's Request-Timeout-Ms and
// Request-Deadline (and, inside a [budget.Retry] loop, the attempt number as
// Request-Attempt) with every call that has a deadline, beside grpc-go's own
// grpc-timeout. The relative value survives a proxy that drops grpc-timeout;
// the absolute one lets the callee charge the call's transit to the budget.
// The default is off: grpc-timeout alone carries the budget, and the two
// entries cost four allocations per call.
func WithBudgetMetadata() ClientOption {
	return clientOption(func(c *clientConfig) { c.metadata = true })
}

// WithClientStage names the stage of the client's local refusals in errors
// and the ledger, as httpbudget's WithClientStage does. The default is the
// call's full method ("/pkg.Service/Method"); a name is what a dashboard should
// show when the method names say too much or too little.
func WithClientStage(name string) ClientOption {
	return clientOption(func(c *clientConfig) { c.stage = name })
}

// stageOf is the stage of a call to method, named as the server side names
// its stages ([edge.Named]).
func (c *clientConfig) stageOf(method string) string { return edge.Named(c.stage, method) }
