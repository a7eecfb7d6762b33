package edge

import (
	"fmt"
	"reflect"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// The options every adapter shares are declared once, here, and every
// adapter's constructors take them: httpbudget.NewHandler,
// grpcbudget.UnaryServerInterceptor and connectbudget.NewServerInterceptor
// take the server options (WithPolicy, WithSwitch, WithStage, WithObserver,
// WithLedgerCapacity, WithAnswerMargin, WithAdmission), and
// httpbudget.NewTransport, grpcbudget.UnaryClientInterceptor and
// connectbudget.NewClientInterceptor the client options (WithTransit,
// WithMinUseful, WithClientStage, WithAdmission). What only one protocol
// has (a classifier of its requests, per-message budgets, Server-Timing)
// stays an option of its adapter.

// Server is the server configuration of an adapter: a pointer to a struct
// that embeds [ServerSettings]. Only such a pointer implements it.
type Server interface{ serverSettings() *ServerSettings }

// Client is the client configuration of an adapter: a pointer to a struct
// that embeds [ClientSettings]. Only such a pointer implements it.
type Client interface{ clientSettings() *ClientSettings }

// ServerOption configures the server side of an adapter: the options
// declared here, which every adapter takes, and each adapter's own. An
// adapter names it as its own ServerOption
// (`type ServerOption = edge.ServerOption`).
//
// An adapter's own option ([ServerFunc]) given to another adapter's
// constructor is a setup mistake: the constructor panics, before any
// request, with an error matching [budget.ErrMisconfigured] that names both
// packages.
type ServerOption interface{ ApplyServer(Server) }

// ClientOption configures the client side of an adapter (see
// [ServerOption]).
type ClientOption interface{ ApplyClient(Client) }

// Option configures both sides of an adapter: it is a [ServerOption] and a
// [ClientOption] (see [WithAdmission] and [Both]).
type Option interface {
	ServerOption
	ClientOption
}

// ServerFunc is an adapter's own server option: a function of its server
// configuration S, a struct that embeds [ServerSettings].
type ServerFunc[S any] func(*S)

// ApplyServer implements [ServerOption]; it panics when s is not a *S (see
// [ServerOption]).
func (f ServerFunc[S]) ApplyServer(s Server) { f(configOf[S](s)) }

// ClientFunc is an adapter's own client option: a function of its client
// configuration C, a struct that embeds [ClientSettings].
type ClientFunc[C any] func(*C)

// ApplyClient implements [ClientOption]; it panics when c is not a *C (see
// [ServerOption]).
func (f ClientFunc[C]) ApplyClient(c Client) { f(configOf[C](c)) }

// Both is an adapter's own option of both sides: a [ServerOption] and a
// [ClientOption]. A nil function leaves its side as it is.
type Both[S, C any] struct {
	Server func(*S)
	Client func(*C)
}

// ApplyServer implements [ServerOption].
func (b Both[S, C]) ApplyServer(s Server) {
	if b.Server != nil {
		b.Server(configOf[S](s))
	}
}

// ApplyClient implements [ClientOption].
func (b Both[S, C]) ApplyClient(c Client) {
	if b.Client != nil {
		b.Client(configOf[C](c))
	}
}

// configOf returns the adapter configuration x is, or panics naming the
// package whose option was given to another package's constructor.
func configOf[T any](x any) *T {
	if c, ok := x.(*T); ok {
		return c
	}
	want, got := reflect.TypeFor[T](), reflect.TypeOf(x).Elem()
	panic(fmt.Errorf("edge: %w: an option of %s (for %v) was given to a constructor of %s (configured by %v)",
		budget.ErrMisconfigured, want.PkgPath(), want, got.PkgPath(), got))
}

// Configure applies opts in order to cfg, an adapter's server configuration,
// and returns it; nil options are skipped, as every adapter's constructors
// skip them. It panics as [ServerOption] says.
func Configure[S any, P interface {
	*S
	Server
}](cfg S, opts []ServerOption) S {
	for _, o := range opts {
		if o != nil {
			o.ApplyServer(P(&cfg))
		}
	}
	return cfg
}

// ConfigureClient is [Configure] for a client's options.
func ConfigureClient[C any, P interface {
	*C
	Client
}](cfg C, opts []ClientOption) C {
	for _, o := range opts {
		if o != nil {
			o.ApplyClient(P(&cfg))
		}
	}
	return cfg
}

// ServerSettings are what every adapter's server is configured with; an
// adapter embeds them in its server configuration, and the options declared
// here set them.
type ServerSettings struct {
	// Policy is the inbound policy; nil is the default policy (see
	// [OrDefault]).
	Policy *wire.Switch
	// Stage names the stage that starts each call's budget; empty is the
	// adapter's default (see [Named]).
	Stage string
	// Observer receives every call's events, refusals on arrival included.
	Observer budget.Observer
	// LedgerCapacity bounds each call's ledger; see [budget.Config].
	LedgerCapacity int
	// Margin is the answer margin: zero adaptive, positive fixed, negative
	// none but the policy's (see [NewMarginKeeper]).
	Margin time.Duration
	// Ops gives each method its op, or nil; nil is no admission (see
	// [OpOf]).
	Ops func(name string) *budget.Op

	invalid error // of the policy WithPolicy was given, reported by Start
}

// ClientSettings are what every adapter's client is configured with; an
// adapter embeds them in its client configuration, and the options declared
// here set them.
type ClientSettings struct {
	// Ops gives each method its op, or nil; nil is no admission (see
	// [OpOf]).
	Ops func(name string) *budget.Op
	// Transit is taken off the time left before a call is sent.
	Transit time.Duration
	// MinUseful is the least time worth sending a call with; an adapter's
	// constructor starts from one millisecond.
	MinUseful time.Duration
	// Stage names the stage of the client's local refusals; empty is the
	// adapter's default (see [Named]).
	Stage string
}

func (s *ServerSettings) serverSettings() *ServerSettings { return s }
func (c *ClientSettings) clientSettings() *ClientSettings { return c }

// serverSetting is a server option declared here.
type serverSetting func(*ServerSettings)

func (f serverSetting) ApplyServer(s Server) { f(s.serverSettings()) }

// clientSetting is a client option declared here.
type clientSetting func(*ClientSettings)

func (f clientSetting) ApplyClient(c Client) { f(c.clientSettings()) }

// WithPolicy sets a fixed inbound policy. The default is the zero
// [wire.Policy]: trust the default sources (the deadline headers and
// metadata the protocol carries: Request-Timeout-Ms, grpc-timeout,
// Connect-Timeout-Ms among them) with no cap, impose no deadline on calls
// that carry none, refuse only calls whose deadline has passed; that suits a
// service behind a trusted edge, not the edge itself, which must trust
// nothing its clients send: WithPolicy(&wire.Policy{Trust:
// wire.SourcesNone, Max: ...}). A nil policy turns enforcement off. Use
// [WithSwitch] to change it at run time.
//
// A policy that [wire.Policy.Validate] rejects (a negative value, a Min that
// would shed every call) is a setup mistake: the adapter's constructor
// panics with an error naming the adapter and the field, matching
// [budget.ErrMisconfigured] and [wire.ErrInvalidPolicy], before any call is
// served. Call Validate first to handle the mistake as an error instead.
func WithPolicy(p *wire.Policy) ServerOption {
	return serverSetting(func(s *ServerSettings) {
		s.Policy = new(wire.Switch)
		s.invalid = s.Policy.Store(p)
	})
}

// WithSwitch reads the inbound policy from sw on every call, so an operator
// can turn enforcement off or loosen it without a restart by storing a new
// policy in sw; [wire.Switch.Store] refuses an invalid one and keeps the
// running policy. A nil sw is the default policy, as if the option were not
// given.
func WithSwitch(sw *wire.Switch) ServerOption {
	return serverSetting(func(s *ServerSettings) { s.Policy, s.invalid = sw, nil })
}

// WithStage names the stage that starts each call's budget, as the ledger,
// refusals and the Budget-Expired header report it. The default is the
// call's method for gRPC and Connect (such as "/pkg.Service/Method") and
// "request" for an HTTP handler.
func WithStage(name string) ServerOption {
	return serverSetting(func(s *ServerSettings) { s.Stage = name })
}

// WithObserver sets the observer of every call's budget, including calls
// refused on arrival. The default is none; [budget.Observers] sends the
// events to several.
func WithObserver(o budget.Observer) ServerOption {
	return serverSetting(func(s *ServerSettings) { s.Observer = o })
}

// WithLedgerCapacity bounds the events each call's ledger keeps; see
// [budget.Config]. The default is 64 events; a negative value disables the
// ledger.
func WithLedgerCapacity(n int) ServerOption {
	return serverSetting(func(s *ServerSettings) { s.LedgerCapacity = n })
}

// WithAnswerMargin sets the answer margin: time held back from the handler's
// deadline so that, when the handler runs out of budget, the expiry the
// adapter answers (504, DEADLINE_EXCEEDED) reaches the caller before the
// caller's own deadline. The handler's deadline is the caller's less the
// larger of the margin and the policy's AnswerMargin.
//
// The default (zero) is adaptive: 1 ms plus four times a peak-following
// average of how late, after a handler's deadline, the adapter's answers
// leave, at most 10 ms. A positive d is a fixed margin; a negative d holds
// back nothing but AnswerMargin, so every hop of a request expires at the
// same instant. Either way the margin is at most 1/10 of the caller's time
// left, so it never eats a meaningful share of a small budget.
//
// Why a margin: with one shared deadline every hop expires at once, each
// caller cancels its call as the callee answers, and the cancellations
// (timers, HTTP/1.1 connections closed mid-request, reconnects) all land on
// the machine at the moment the first caller stops waiting. With a margin at
// every hop the innermost handler stops first and every hop answers an
// honest expiry while its caller still listens; connections stay open.
func WithAnswerMargin(d time.Duration) ServerOption {
	return serverSetting(func(s *ServerSettings) { s.Margin = d })
}

// WithAdmission gives calls a [budget.Op] each, on both sides: lookup
// returns the op of a name, or nil for none ([Ops] turns a map into a
// lookup; a nil lookup removes admission). The name is what the adapter
// calls a stage: a gRPC method or Connect procedure ("/pkg.Service/Method"),
// an HTTP handler's stage ([WithStage]; "request" by default) and an HTTP
// client's ([WithClientStage]; the request's host by default). The default
// is no admission.
//
// On the server, a call with an op runs its handler as one attempt of the
// op ([budget.Op.Do]): the op measures the handler's latency, refuses a call
// its measurements say cannot finish in the time it has, and, with its Limit
// set, bounds the handlers running at once, by the call's criticality, so
// that under a shortage sheddable calls go first. A refused call never
// reaches the handler: it is answered as a refusal on arrival is (504 with
// Budget-Expired, DEADLINE_EXCEEDED) and marked Budget-No-Retry: shed, which
// this library's clients do not retry.
//
// On the client, the same happens before anything is sent: a refused call
// makes no network call. The op learns from the time to the answer (for
// HTTP, to its header). A stream's lifetime is not a latency, so a stream's
// op decides without learning on the client (it learns from the unary calls
// that share it), and on the server the handler's whole run is the sample.
func WithAdmission(lookup func(name string) *budget.Op) Option {
	return admission(lookup)
}

type admission func(name string) *budget.Op

func (a admission) ApplyServer(s Server) { s.serverSettings().Ops = a }
func (a admission) ApplyClient(c Client) { c.clientSettings().Ops = a }

// WithTransit sets the transit allowance taken off the time left before a
// call is sent, so the callee does not count on time the call spends on the
// wire: the call's context gets a deadline that much earlier, and the
// values sent are computed from it. The default is zero: the callee's skew
// check on Request-Deadline already charges transit to the budget when
// clocks agree. A negative d is zero.
func WithTransit(d time.Duration) ClientOption {
	return clientSetting(func(c *ClientSettings) { c.Transit = max(d, 0) })
}

// WithMinUseful sets the least time worth sending a call with; below it the
// call is refused locally, without a network call, with an error matching
// [budget.ErrInsufficient] (and the protocol's deadline code). The default
// is one millisecond, the smallest value Request-Timeout-Ms can carry; a
// smaller d is one millisecond.
func WithMinUseful(d time.Duration) ClientOption {
	return clientSetting(func(c *ClientSettings) { c.MinUseful = max(d, time.Millisecond) })
}

// WithClientStage names the stage of the client's local refusals in errors
// and the ledger. The default is the call's method for gRPC and Connect
// ("/pkg.Service/Method") and the request's host for HTTP; a name is what a
// dashboard should show when those say too much or too little.
func WithClientStage(name string) ClientOption {
	return clientSetting(func(c *ClientSettings) { c.Stage = name })
}

// Ops maps names to their ops. Its Op method is a lookup for
// [WithAdmission]: edge.WithAdmission(edge.Ops{"/pkg.Svc/Get": getOp}.Op).
type Ops map[string]*budget.Op

// Op returns the op of name, or nil.
func (o Ops) Op(name string) *budget.Op { return o[name] }

// Start readies s for serving: it sets the default policy in place of a nil
// one, and returns the margin keeper and the [Arrival] of adapter (the
// adapter's package name, for errors and events), whose Stage is set per
// call. It panics as [WithPolicy] says when the policy given was invalid.
func (s *ServerSettings) Start(adapter string) (*MarginKeeper, Arrival) {
	if s.invalid != nil {
		panic(fmt.Errorf("%s: %w: %w", adapter, budget.ErrMisconfigured, s.invalid))
	}
	s.Policy = OrDefault(s.Policy)
	k := NewMarginKeeper(s.Margin)
	return k, Arrival{Adapter: adapter, Observer: s.Observer, LedgerCapacity: s.LedgerCapacity, Margin: k}
}
