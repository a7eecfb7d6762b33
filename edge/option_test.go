package edge_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// The configurations of a made-up adapter, as grpcbudget and connectbudget
// declare theirs.
type serverConfig struct {
	edge.ServerSettings
	extra int
}

type clientConfig struct {
	edge.ClientSettings
	stage string
}

type (
	serverOption = edge.ServerOption[serverConfig]
	clientOption = edge.ClientOption[clientConfig]
)

func TestConfigureAppliesInOrderAndSkipsNil(t *testing.T) {
	opts := []serverOption{
		edge.ServerFunc[serverConfig](func(c *serverConfig) { c.extra = 1; c.Stage = "first" }),
		nil,
		edge.ServerFunc[serverConfig](func(c *serverConfig) { c.Stage = "second" }),
	}
	cfg := edge.Configure(serverConfig{extra: 7}, opts)
	if cfg.extra != 1 || cfg.Stage != "second" {
		t.Fatalf("Configure gave %+v, want extra 1 and the later stage", cfg)
	}
	c := edge.ConfigureClient(clientConfig{stage: "default"}, []clientOption{nil, edge.ClientFunc[clientConfig](func(c *clientConfig) { c.stage = "set" })})
	if c.stage != "set" {
		t.Fatalf("ConfigureClient gave stage %q", c.stage)
	}
}

func TestBothLeavesANilSideAlone(t *testing.T) {
	b := edge.Both[serverConfig, clientConfig]{Server: func(c *serverConfig) { c.extra = 3 }}
	s := serverConfig{}
	c := clientConfig{stage: "kept"}
	b.ApplyServer(&s)
	b.ApplyClient(&c) // no client function: must not panic
	if s.extra != 3 || c.stage != "kept" {
		t.Fatalf("got %+v and %+v", s, c)
	}
}

func TestWithAdmissionSetsBothSides(t *testing.T) {
	op := &budget.Op{Name: "get"}
	o := edge.WithAdmission[serverConfig, clientConfig](edge.Ops{"/svc/Get": op}.Op)
	s := edge.Configure(serverConfig{}, []serverOption{o})
	c := edge.ConfigureClient(clientConfig{}, []clientOption{o})
	if edge.OpOf(s.Ops, "/svc/Get") != op || edge.OpOf(c.Ops, "/svc/Get") != op {
		t.Fatal("WithAdmission did not give both sides the op")
	}
	if edge.OpOf(s.Ops, "/svc/Other") != nil {
		t.Fatal("a method without an op got one")
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

// An adapter declares its option types from edge's and builds its
// configuration with Configure.
func ExampleConfigure() {
	type config struct {
		edge.ServerSettings
		verbose bool
	}
	type Option = edge.ServerOption[config]
	withVerbose := func() Option { return edge.ServerFunc[config](func(c *config) { c.verbose = true }) }
	withStage := func(s string) Option { return edge.ServerFunc[config](func(c *config) { c.Stage = s }) }

	cfg := edge.Configure(config{}, []Option{withStage("pricing"), withVerbose()})
	_, arrival := cfg.Start("myadapter")
	fmt.Println(cfg.Stage, cfg.verbose, arrival.Adapter)
	// Output: pricing true myadapter
}
