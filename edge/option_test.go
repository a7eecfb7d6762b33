package edge_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// The configurations of a made-up adapter, as httpbudget, grpcbudget and
// connectbudget declare theirs.
type serverConfig struct {
	edge.ServerSettings
	extra int
}

type clientConfig struct {
	edge.ClientSettings
	verbose bool
}

// The configuration of another made-up adapter.
type otherConfig struct {
	edge.ServerSettings
}

func TestConfigureAppliesInOrderAndSkipsNil(t *testing.T) {
	opts := []edge.ServerOption{
		edge.ServerFunc[serverConfig](func(c *serverConfig) { c.extra = 1; c.Stage = "first" }),
		nil,
		edge.WithStage("second"),
	}
	cfg := edge.Configure(serverConfig{extra: 7}, opts)
	if cfg.extra != 1 || cfg.Stage != "second" {
		t.Fatalf("Configure gave %+v, want extra 1 and the later stage", cfg)
	}
	c := edge.ConfigureClient(clientConfig{}, []edge.ClientOption{nil, edge.ClientFunc[clientConfig](func(c *clientConfig) { c.verbose = true })})
	if !c.verbose {
		t.Fatalf("ConfigureClient gave %+v", c)
	}
}

// Every shared option sets its field of the settings, whatever adapter
// embeds them.
func TestSharedOptionsSetTheSettings(t *testing.T) {
	var obs budget.ObserverFunc = func(context.Context, budget.Event) {}
	sw := new(wire.Switch)
	s := edge.Configure(serverConfig{}, []edge.ServerOption{
		edge.WithPolicy(&wire.Policy{Max: time.Second}), edge.WithStage("checkout"), edge.WithObserver(obs),
		edge.WithLedgerCapacity(-1), edge.WithAnswerMargin(3 * time.Millisecond),
	})
	if p := s.Policy.Load(); p == nil || p.Max != time.Second || s.Stage != "checkout" || s.Observer == nil ||
		s.LedgerCapacity != -1 || s.Margin != 3*time.Millisecond {
		t.Fatalf("server settings %+v", s.ServerSettings)
	}
	if s = edge.Configure(serverConfig{}, []edge.ServerOption{edge.WithSwitch(sw)}); s.Policy != sw {
		t.Fatal("WithSwitch did not set the switch")
	}
	c := edge.ConfigureClient(clientConfig{ClientSettings: edge.ClientSettings{MinUseful: time.Millisecond}},
		[]edge.ClientOption{edge.WithTransit(-time.Second), edge.WithMinUseful(time.Microsecond), edge.WithClientStage("pricing")})
	if c.Transit != 0 || c.MinUseful != time.Millisecond || c.Stage != "pricing" {
		t.Fatalf("client settings %+v: want transit 0 (negative is zero), min useful 1ms (the floor), stage pricing", c.ClientSettings)
	}
	if c = edge.ConfigureClient(clientConfig{}, []edge.ClientOption{edge.WithTransit(5 * time.Millisecond)}); c.Transit != 5*time.Millisecond {
		t.Fatalf("WithTransit(5ms) gave %v", c.Transit)
	}
}

func TestBothLeavesANilSideAlone(t *testing.T) {
	b := edge.Both[serverConfig, clientConfig]{Server: func(c *serverConfig) { c.extra = 3 }}
	s := edge.Configure(serverConfig{}, []edge.ServerOption{b})
	c := edge.ConfigureClient(clientConfig{verbose: true}, []edge.ClientOption{b}) // no client function: must not panic
	if s.extra != 3 || !c.verbose {
		t.Fatalf("got %+v and %+v", s, c)
	}
}

func TestWithAdmissionSetsBothSides(t *testing.T) {
	op := &budget.Op{Name: "get"}
	o := edge.WithAdmission(edge.Ops{"/svc/Get": op}.Op)
	s := edge.Configure(serverConfig{}, []edge.ServerOption{o})
	c := edge.ConfigureClient(clientConfig{}, []edge.ClientOption{o})
	if edge.OpOf(s.Ops, "/svc/Get") != op || edge.OpOf(c.Ops, "/svc/Get") != op {
		t.Fatal("WithAdmission did not give both sides the op")
	}
	if edge.OpOf(s.Ops, "/svc/Other") != nil {
		t.Fatal("a method without an op got one")
	}
	s = edge.Configure(s, []edge.ServerOption{edge.WithAdmission(nil)})
	if s.Ops != nil {
		t.Fatal("WithAdmission(nil) did not remove admission")
	}
}

// One adapter's own option given to another's constructor is a setup
// mistake that names both packages, not a silent no-op.
func TestAnotherAdaptersOptionPanics(t *testing.T) {
	mine := edge.ServerFunc[serverConfig](func(c *serverConfig) { c.extra = 1 })
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, budget.ErrMisconfigured) || !strings.Contains(err.Error(), "github.com/timebudget/budget/edge_test") {
			t.Fatalf("an option of another adapter: panic %v, want ErrMisconfigured naming the packages", err)
		}
	}()
	edge.Configure(otherConfig{}, []edge.ServerOption{mine})
}

func TestInvalidPolicyPanicsAtStartNamingTheAdapter(t *testing.T) {
	s := edge.Configure(serverConfig{}, []edge.ServerOption{edge.WithPolicy(&wire.Policy{Max: -1})})
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, budget.ErrMisconfigured) || !errors.Is(err, wire.ErrInvalidPolicy) || !strings.HasPrefix(err.Error(), "myadapter: ") {
			t.Fatalf("Start with an invalid policy: panic %v", err)
		}
	}()
	s.Start("myadapter")
}

func TestWithPolicyNilTurnsEnforcementOff(t *testing.T) {
	s := edge.Configure(serverConfig{}, []edge.ServerOption{edge.WithPolicy(nil)})
	s.Start("myadapter")
	if s.Policy == nil || s.Policy.Load() != nil {
		t.Fatalf("WithPolicy(nil): switch %v holding %v, want a switch holding nil", s.Policy, s.Policy.Load())
	}
}

func TestStartDefaultsThePolicy(t *testing.T) {
	s := edge.ServerSettings{Observer: nil, LedgerCapacity: 5, Margin: 3 * time.Millisecond}
	k, a := s.Start("someadapter")
	if s.Policy == nil || s.Policy.Load() == nil {
		t.Fatal("Start left a nil policy")
	}
	if k == nil || a.Margin == nil || a.Adapter != "someadapter" || a.LedgerCapacity != 5 {
		t.Fatalf("Start gave %+v", a)
	}
	p := &wire.Policy{Max: time.Second}
	s = edge.ServerSettings{Policy: edge.PolicySwitch("someadapter", p)}
	s.Start("someadapter")
	if got := s.Policy.Load(); got == nil || got.Max != time.Second {
		t.Fatalf("Start replaced the policy it was given: %+v", got)
	}
}

// An adapter names its option types after edge's, declares its own options
// as ServerFunc of its configuration, and builds the configuration with
// Configure; its users pass edge's shared options beside its own.
func ExampleConfigure() {
	type config struct {
		edge.ServerSettings
		verbose bool
	}
	type Option = edge.ServerOption
	withVerbose := func() Option { return edge.ServerFunc[config](func(c *config) { c.verbose = true }) }

	cfg := edge.Configure(config{}, []Option{edge.WithStage("pricing"), withVerbose()})
	_, arrival := cfg.Start("myadapter")
	fmt.Println(cfg.Stage, cfg.verbose, arrival.Adapter)
	// Output: pricing true myadapter
}
