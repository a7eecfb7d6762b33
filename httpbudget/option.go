package httpbudget

import (
	"net/http"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// ServerOption configures [NewHandler].
type ServerOption interface{ applyHandler(*handlerConfig) }

// ClientOption configures [NewTransport].
type ClientOption interface{ applyClient(*clientConfig) }

type handlerConfig struct {
	policy       *wire.Switch
	stage        string
	observer     budget.Observer
	serverTiming bool
	ledgerCap    int
	margin       time.Duration
	classify     func(*http.Request) budget.Criticality // see WithClassifier
	ops          func(stage string) *budget.Op          // see WithAdmission
}

type clientConfig struct {
	transit    time.Duration
	minUseful  time.Duration
	connect    bool
	envoy      bool
	stage      string
	noDeadline bool          // so that the zero Transport sends both headers
	linger     time.Duration // 0: adaptive; positive: always; negative: never
}

type handlerOption func(*handlerConfig)

func (f handlerOption) applyHandler(c *handlerConfig) { f(c) }

type clientOption func(*clientConfig)

func (f clientOption) applyClient(c *clientConfig) { f(c) }

// WithPolicy sets a fixed inbound policy. The default is the zero
// [wire.Policy]: trust the default sources, impose no deadline on requests
// that send none and no cap on those that send one, refuse only requests
// whose deadline has passed; that suits a service behind a trusted edge, not
// the edge itself (see [NewHandler]). A nil policy turns enforcement off. Use
// [WithSwitch] to change it at run time.
//
// A policy that [wire.Policy.Validate] rejects (a negative value, a Min that
// would shed every request) is a setup mistake: [NewHandler] panics with an
// error matching [budget.ErrMisconfigured] and [wire.ErrInvalidPolicy] that
// names the field, before any request is served. Call Validate first to
// handle the mistake as an error instead.
func WithPolicy(p *wire.Policy) ServerOption {
	// As NewHandler(nil) does: a setup mistake panics, before any request.
	return handlerOption(func(c *handlerConfig) { c.policy = edge.PolicySwitch("httpbudget", p) })
}

// WithSwitch reads the inbound policy from s on every request, so an operator
// can turn enforcement off or loosen it without a restart by storing a new
// policy in s; [wire.Switch.Store] refuses an invalid one and keeps the
// running policy. A nil s is the default policy, as if the option were not
// given.
func WithSwitch(s *wire.Switch) ServerOption {
	return handlerOption(func(c *handlerConfig) { c.policy = s })
}

// WithStage names the stage a refusal reports in the Budget-Expired header
// and the ledger. The default is "request".
func WithStage(name string) ServerOption {
	return handlerOption(func(c *handlerConfig) { c.stage = name })
}

// WithObserver sets the observer of every request's budget, including
// requests refused on arrival. The default is none.
func WithObserver(o budget.Observer) ServerOption {
	return handlerOption(func(c *handlerConfig) { c.observer = o })
}

// WithServerTiming adds a Server-Timing header rendered from the request's
// ledger when the handler writes its response header. The default is off: the
// header tells clients how the server spent its time, which an edge facing
// the public may not want to say. It costs one allocation per request.
func WithServerTiming() ServerOption {
	return handlerOption(func(c *handlerConfig) { c.serverTiming = true })
}

// WithLedgerCapacity bounds the events each request's ledger keeps; see
// [budget.Config]. The default is 64 events; a negative
// value disables the ledger.
func WithLedgerCapacity(n int) ServerOption {
	return handlerOption(func(c *handlerConfig) { c.ledgerCap = n })
}

// WithTransit sets the transit allowance subtracted from the time left before
// it is sent, so the callee does not count on time the request spends on the
// wire. The default is zero: the Request-Deadline header and the callee's
// skew check already charge transit to the budget when clocks agree.
func WithTransit(d time.Duration) ClientOption {
	return clientOption(func(c *clientConfig) { c.transit = max(d, 0) })
}

// WithMinUseful sets the least time worth sending a request with; below it
// the request is refused locally without a network call. The default is one
// millisecond, the smallest value Request-Timeout-Ms can carry.
func WithMinUseful(d time.Duration) ClientOption {
	return clientOption(func(c *clientConfig) { c.minUseful = max(d, time.Millisecond) })
}

// WithConnectTimeoutHeader also sends Connect-Timeout-Ms, for Connect
// protocol servers. The default is off.
func WithConnectTimeoutHeader() ClientOption {
	return clientOption(func(c *clientConfig) { c.connect = true })
}

// WithEnvoyTimeoutHeader also sends x-envoy-upstream-rq-timeout-ms, so an
// Envoy in front of the callee times the request out with the budget. The
// default is off.
func WithEnvoyTimeoutHeader() ClientOption {
	return clientOption(func(c *clientConfig) { c.envoy = true })
}

// WithoutDeadlineHeader stops sending Request-Deadline (the absolute form),
// for callees whose clocks are known not to agree with ours. The default
// sends both headers.
func WithoutDeadlineHeader() ClientOption {
	return clientOption(func(c *clientConfig) { c.noDeadline = true })
}

// WithClientStage names the stage of local refusals in errors and the ledger.
// The default is the request's host.
func WithClientStage(name string) ClientOption {
	return clientOption(func(c *clientConfig) { c.stage = name })
}
