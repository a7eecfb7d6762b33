package grpcbudget

import (
	"encoding/json"
	"fmt"
	"sync"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/endpointsharding"
	"google.golang.org/grpc/balancer/pickfirst"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge/pick"
)

// BalancerName is the name the budget-aware balancer is registered under,
// for a service config such as
//
//	{"loadBalancingConfig": [{"budget_aware": {}}]}
//
// The balancer sends each call to a replica likely to answer within the time
// the call has left (its context's deadline). Per ready endpoint it keeps a
// censoring-aware latency estimate (a call cut off by its deadline counts as
// taking at least that long; see [budget.Estimator]), a smoothed recent
// latency and the calls in flight. For each call it keeps the replicas whose
// smoothed latency and estimated 0.99 quantile fit in the time left, draws
// two of them at random and takes the one with the better expected
// completion, latency × (calls in flight + 1), so that callers choosing at
// once do not all pile onto one replica; latencies within twice the best
// replica's count as the best's, so that replicas differing by noise are
// spread by their calls in flight alone. When none fits it takes the best
// expected completion and leaves the decision to admission
// ([UnaryClientInterceptor] with [WithAdmission]).
//
// A replica whose recent latency exceeds 4 times the best one's (by at least
// 2 ms, its median confirming it), or failing 5 calls in a row
// (UNAVAILABLE, INTERNAL, DATA_LOSS), is ejected: it receives only probes,
// one call in 100 (given to a call with time for the replica's estimate),
// until probes show its latency halved and within twice the best's, or a
// success after failures. Its
// ejection and recovery are reported as [budget.EventEject] and
// [budget.EventRecover] events to the observer of the budget of the call
// that noticed them (see [budget.Note]), and to the observer of a balancer
// built with [NewBalancerBuilder].
//
// The service config may set "probeEvery" (one call in that many may be a
// probe; default 100) and "ejectFactor" (default 4). Endpoints connect
// through pick_first children, as round_robin's do.
const BalancerName = "budget_aware"

func init() { balancer.Register(NewBalancerBuilder(BalancerName, nil)) }

// NewBalancerBuilder returns the budget-aware balancer of [BalancerName]
// under another name, reporting ejections and recoveries to observer as
// well (nil for none). Register it with balancer.Register at init time, as
// grpc-go requires, and name it in the service config.
func NewBalancerBuilder(name string, observer budget.Observer) balancer.Builder {
	return balancerBuilder{name: name, observer: observer}
}

type balancerBuilder struct {
	name     string
	observer budget.Observer
}

// balancerConfig is the budget-aware balancer's service config.
type balancerConfig struct {
	serviceconfig.LoadBalancingConfig `json:"-"`

	ProbeEvery  int     `json:"probeEvery,omitempty"`
	EjectFactor float64 `json:"ejectFactor,omitempty"`
}

func (b balancerBuilder) Name() string { return b.name }

func (b balancerBuilder) ParseConfig(raw json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	cfg := &balancerConfig{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, cfg); err != nil {
			return nil, fmt.Errorf("grpcbudget: %s balancer config %s: %w", b.name, raw, err)
		}
	}
	if cfg.ProbeEvery < 0 {
		return nil, fmt.Errorf("grpcbudget: %s balancer config: probeEvery is %d, want 0 (the default) or more", b.name, cfg.ProbeEvery)
	}
	if cfg.EjectFactor != 0 && cfg.EjectFactor <= 1 {
		return nil, fmt.Errorf("grpcbudget: %s balancer config: ejectFactor is %g, want 0 (the default) or more than 1", b.name, cfg.EjectFactor)
	}
	return cfg, nil
}

func (b balancerBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	lb := &budgetBalancer{
		ClientConn: cc,
		builder:    b,
		replicas:   resolver.NewEndpointMap[*pick.Replica](),
	}
	lb.chooser = lb.newChooser(balancerConfig{})
	lb.child = endpointsharding.NewBalancer(lb, opts, balancer.Get(pickfirst.Name).Build, endpointsharding.Options{})
	return lb
}

// budgetBalancer spreads calls over endpoints through endpointsharding, one
// pick_first child per endpoint, and picks among the ready ones.
type budgetBalancer struct {
	balancer.ClientConn // the channel; UpdateState is the children's, below
	builder             balancerBuilder
	child               balancer.Balancer

	mu       sync.Mutex
	cfg      balancerConfig
	chooser  *pick.Balancer
	replicas *resolver.EndpointMap[*pick.Replica]
}

func (lb *budgetBalancer) newChooser(cfg balancerConfig) *pick.Balancer {
	return pick.New(pick.Config{ProbeEvery: cfg.ProbeEvery, EjectFactor: cfg.EjectFactor,
		Stage: lb.builder.name, Observer: lb.builder.observer})
}

func (lb *budgetBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	if cfg, ok := s.BalancerConfig.(*balancerConfig); ok {
		lb.mu.Lock()
		if cfg.ProbeEvery != lb.cfg.ProbeEvery || cfg.EjectFactor != lb.cfg.EjectFactor {
			lb.cfg = *cfg
			lb.chooser = lb.newChooser(*cfg)
		}
		lb.mu.Unlock()
	}
	return lb.child.UpdateClientConnState(balancer.ClientConnState{
		ResolverState: pickfirst.EnableHealthListener(s.ResolverState),
	})
}

func (lb *budgetBalancer) ResolverError(err error) { lb.child.ResolverError(err) }

func (lb *budgetBalancer) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {
	// Endpoints' subchannels report to their pick_first children.
}

func (lb *budgetBalancer) ExitIdle() { lb.child.ExitIdle() }

func (lb *budgetBalancer) Close() { lb.child.Close() }

// UpdateState receives the children's aggregated state and hands the
// channel a picker over the ready endpoints; with none ready, the
// aggregated state as it is.
func (lb *budgetBalancer) UpdateState(state balancer.State) {
	var ready []endpointsharding.ChildState
	for _, c := range endpointsharding.ChildStatesFromPicker(state.Picker) {
		if c.State.ConnectivityState == connectivity.Ready {
			ready = append(ready, c)
		}
	}
	if len(ready) == 0 {
		lb.ClientConn.UpdateState(state)
		return
	}
	lb.mu.Lock()
	live := resolver.NewEndpointMap[bool]()
	p := &budgetPicker{chooser: lb.chooser, reps: make([]*pick.Replica, len(ready)), pickers: make([]balancer.Picker, len(ready))}
	for i, c := range ready {
		live.Set(c.Endpoint, true)
		r, ok := lb.replicas.Get(c.Endpoint)
		if !ok {
			name := ""
			if len(c.Endpoint.Addresses) > 0 {
				name = c.Endpoint.Addresses[0].Addr
			}
			r = lb.chooser.NewReplica(name)
			lb.replicas.Set(c.Endpoint, r)
		}
		p.reps[i], p.pickers[i] = r, c.State.Picker
	}
	for e := range lb.replicas.All() {
		if _, ok := live.Get(e); !ok {
			lb.replicas.Delete(e) // it comes back with a fresh estimate
		}
	}
	lb.mu.Unlock()
	lb.ClientConn.UpdateState(balancer.State{ConnectivityState: connectivity.Ready, Picker: p})
}
