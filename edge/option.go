package edge

import (
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// ServerOption configures the server side of an RPC adapter, whose
// configuration is S. An adapter names its own: grpcbudget and connectbudget
// declare `type ServerOption = edge.ServerOption[serverConfig]`, so that
// their options are values of one kind, checked by the compiler: a
// client-only option is not a ServerOption.
type ServerOption[S any] interface{ ApplyServer(*S) }

// ClientOption configures the client side of an RPC adapter, whose
// configuration is C (see [ServerOption]).
type ClientOption[C any] interface{ ApplyClient(*C) }

// Option configures both sides of an RPC adapter: it is a [ServerOption]
// and a [ClientOption] (see [Both]).
type Option[S, C any] interface {
	ServerOption[S]
	ClientOption[C]
}

// ServerFunc is a [ServerOption] that is a function of the configuration.
type ServerFunc[S any] func(*S)

// ApplyServer implements [ServerOption].
func (f ServerFunc[S]) ApplyServer(s *S) { f(s) }

// ClientFunc is a [ClientOption] that is a function of the configuration.
type ClientFunc[C any] func(*C)

// ApplyClient implements [ClientOption].
func (f ClientFunc[C]) ApplyClient(c *C) { f(c) }

// Both is an option of both sides: a [ServerOption] and a [ClientOption].
// A nil function leaves its side as it is.
type Both[S, C any] struct {
	Server func(*S)
	Client func(*C)
}

// ApplyServer implements [ServerOption].
func (b Both[S, C]) ApplyServer(s *S) {
	if b.Server != nil {
		b.Server(s)
	}
}

// ApplyClient implements [ClientOption].
func (b Both[S, C]) ApplyClient(c *C) {
	if b.Client != nil {
		b.Client(c)
	}
}

// Configure applies opts in order to cfg and returns it; nil options are
// skipped, as every adapter's constructors skip them.
func Configure[S any](cfg S, opts []ServerOption[S]) S {
	for _, o := range opts {
		if o != nil {
			o.ApplyServer(&cfg)
		}
	}
	return cfg
}

// ConfigureClient is [Configure] for a client's options.
func ConfigureClient[C any](cfg C, opts []ClientOption[C]) C {
	for _, o := range opts {
		if o != nil {
			o.ApplyClient(&cfg)
		}
	}
	return cfg
}

// ServerSettings are what every RPC adapter's server is configured with;
// an adapter embeds them in its server configuration and sets them from its
// options (WithPolicy, WithSwitch, WithStage, WithObserver,
// WithLedgerCapacity, WithAnswerMargin).
type ServerSettings struct {
	// Policy is the inbound policy; nil is the default policy (see
	// [OrDefault]).
	Policy *wire.Switch
	// Stage names the stage that starts each call's budget; empty is the
	// call's method (see [Named]).
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
}

// ClientSettings are what every RPC adapter's client is configured with;
// an adapter embeds them in its client configuration.
type ClientSettings struct {
	// Ops gives each method its op, or nil; nil is no admission (see
	// [OpOf]).
	Ops func(name string) *budget.Op
}

func (s *ServerSettings) serverSettings() *ServerSettings { return s }
func (c *ClientSettings) clientSettings() *ClientSettings { return c }

// WithAdmission is the option of an adapter whose server configuration S
// embeds [ServerSettings] and whose client configuration C embeds
// [ClientSettings] that gives both sides' calls their ops: lookup returns
// the op of a method name, or nil for a method without one ([Ops] turns a
// map into a lookup). An adapter calls it as
// edge.WithAdmission[serverConfig, clientConfig](lookup).
func WithAdmission[S, C any, PS interface {
	*S
	serverSettings() *ServerSettings
}, PC interface {
	*C
	clientSettings() *ClientSettings
}](lookup func(name string) *budget.Op) Both[S, C] {
	return Both[S, C]{
		Server: func(s *S) { PS(s).serverSettings().Ops = lookup },
		Client: func(c *C) { PC(c).clientSettings().Ops = lookup },
	}
}

// Ops maps method names to their ops. Its Op method is a lookup for an
// adapter's WithAdmission.
type Ops map[string]*budget.Op

// Op returns the op of name, or nil.
func (o Ops) Op(name string) *budget.Op { return o[name] }

// Start readies s for serving: it sets the default policy in place of a nil
// one, and returns the margin keeper and the [Arrival] of adapter (the
// adapter's package name, for errors and events), whose Stage is set per
// call.
func (s *ServerSettings) Start(adapter string) (*MarginKeeper, Arrival) {
	s.Policy = OrDefault(s.Policy)
	k := NewMarginKeeper(s.Margin)
	return k, Arrival{Adapter: adapter, Observer: s.Observer, LedgerCapacity: s.LedgerCapacity, Margin: k}
}
