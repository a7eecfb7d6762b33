package grpcbudget

import (
	"bytes"
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
// ([UnaryClientInterceptor] with [edge.WithAdmission]).
//
// The balancer learns latency from successful calls only. What a call's
// end says of its replica, by code:
//
//	OK                          a success: a latency sample
//	DEADLINE_EXCEEDED           at the call's own deadline (at most a tenth of its
//	                            time left, or 1 ms): cut off, a lower bound of the
//	                            latency; earlier: a failure (the replica shed the
//	                            call, as a grpcbudget server does, or its own work
//	                            ran out of time)
//	UNAVAILABLE, RESOURCE_EXHAUSTED,
//	UNKNOWN, INTERNAL, DATA_LOSS a failure of the replica, however fast
//	CANCELLED                   nothing: the caller gave up
//	any other code              an answer of the application (INVALID_ARGUMENT,
//	                            NOT_FOUND, ALREADY_EXISTS, PERMISSION_DENIED,
//	                            UNAUTHENTICATED, FAILED_PRECONDITION, ABORTED,
//	                            OUT_OF_RANGE, UNIMPLEMENTED): the replica is alive,
//	                            which ends a run of failures, and its speed at
//	                            refusing is no latency
//
// UNIMPLEMENTED is an answer, not a failure, because the balancer's state is
// the channel's: a method no replica has yet would otherwise eject every
// replica for the other methods too. A replica that fails fast is thus never
// the fastest: it fails 5 calls in a row and is ejected, as a slow one is.
//
// A replica whose recent latency exceeds 4 times the best one's (by at least
// 2 ms, its median confirming it), or failing 5 calls in a row, is ejected:
// it receives only probes. One call in 100 is due as a probe while a
// replica is ejected, slower than twice the best (by 2 ms) or unfit for the
// call (the first call with time for the replica's estimate takes it; such
// replicas take the probes in turn). A replica ejected for failures returns
// at its first probe that succeeds or answers; one ejected for its latency
// after 3 probes in a row that succeed fast (within half the latency that
// ejected it, and twice the best's). So after a fault ends (and the calls
// the replica held then have ended), a replica is chosen again within
// 5 × m × probeEvery calls, plus one per caller and one per replica, m the
// replicas being probed (see package
// [github.com/timebudget/budget/edge/pick]). Its
// ejection and recovery are reported as [budget.EventEject] and
// [budget.EventRecover] events to the observer of the budget of the call
// that noticed them (see [budget.Note]), and to the observer of a balancer
// built with [NewBalancerBuilder].
//
// The service config may set "probeEvery" (one call in that many is due as
// a probe: an integer from 2 to 10000; default 100) and "ejectFactor" (a
// number above 1 and at most 100; default 4). Any other field, or a value
// out of range, makes the config invalid, with an error naming it.
// Endpoints connect through pick_first children, as round_robin's do.
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

	ProbeEvery  int     // 0 for the default
	EjectFactor float64 // 0 for the default
}

func (b balancerBuilder) Name() string { return b.name }

// rawBalancerConfig is the service config as written: numbers kept as
// written, so that a value out of range is named as such rather than as a
// failure to fit a Go type.
type rawBalancerConfig struct {
	ProbeEvery  *json.Number `json:"probeEvery"`
	EjectFactor *json.Number `json:"ejectFactor"`
}

// ParseConfig parses the balancer's service config strictly: a field it
// does not know (a misspelt "probeEvry") or a value out of range is an
// error naming it, never a silent default.
func (b balancerBuilder) ParseConfig(raw json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	cfg := &balancerConfig{}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return cfg, nil
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("grpcbudget: %s balancer config: "+format, append([]any{b.name}, a...)...)
	}
	var in rawBalancerConfig
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		return nil, fail("%w (the fields are probeEvery and ejectFactor)", err)
	}
	if dec.More() {
		return nil, fail("more than one JSON value")
	}
	if in.ProbeEvery != nil {
		n, err := in.ProbeEvery.Int64()
		if err != nil || n < pick.MinProbeEvery || n > pick.MaxProbeEvery {
			return nil, fail("probeEvery is %s, want an integer from %d to %d", *in.ProbeEvery, pick.MinProbeEvery, pick.MaxProbeEvery)
		}
		cfg.ProbeEvery = int(n)
	}
	if in.EjectFactor != nil {
		f, err := in.EjectFactor.Float64()
		if err != nil || !(f > 1 && f <= pick.MaxEjectFactor) {
			return nil, fail("ejectFactor is %s, want a number above 1 and at most %d", *in.EjectFactor, pick.MaxEjectFactor)
		}
		cfg.EjectFactor = f
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
