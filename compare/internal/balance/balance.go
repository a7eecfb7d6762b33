// Package balance compares gRPC load balancers on callers with deadlines:
// three replicas on loopback, one of which turns slow (its latency times
// SlowFactor) midway through the traffic and then recovers. Callers in a
// closed loop draw each call's budget uniformly between MinBudget and
// MaxBudget and send it as the call's deadline. Every variant (grpc-go's
// round_robin, least_request, weighted_round_robin fed by ORCA per-call
// reports, pick_first, and grpcbudget's budget_aware) runs the same phases
// against the same replicas, one after the other, in one process.
//
// Every figure is measured while the traffic runs: each call records when
// it started, its budget, how long it took, how it ended and which replica
// answered it (the peer of the call). Nothing is derived from a model.
package balance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	_ "google.golang.org/grpc/balancer/leastrequest" // registers least_request_experimental
	_ "google.golang.org/grpc/balancer/weightedroundrobin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget/grpcbudget"
)

// Variants are the balancers compared, in the order they run, by the names
// the report uses.
var Variants = []string{"round_robin", "least_request", "weighted_round_robin", "pick_first", "budget_aware"}

// serviceConfigs are the variants' service configs. least_request is
// grpc-go's least_request_experimental (balancer/leastrequest), choosing the
// fewer calls in flight of two random endpoints. weighted_round_robin reads
// the replicas' per-call ORCA reports; its blackout is off and its weights
// are updated every 100 ms (grpc-go's shortest), so that it reacts as fast
// as it can.
var serviceConfigs = map[string]string{
	"round_robin":          `{"loadBalancingConfig":[{"round_robin":{}}]}`,
	"least_request":        `{"loadBalancingConfig":[{"least_request_experimental":{"choiceCount":2}}]}`,
	"weighted_round_robin": `{"loadBalancingConfig":[{"weighted_round_robin":{"blackoutPeriod":"0s","weightUpdatePeriod":"0.1s","weightExpirationPeriod":"3s"}}]}`,
	"pick_first":           `{"loadBalancingConfig":[{"pick_first":{}}]}`,
	"budget_aware":         `{"loadBalancingConfig":[{"` + grpcbudget.BalancerName + `":{}}]}`,
}

// Config describes a comparison. The zero value of a field means its
// default.
type Config struct {
	Base       time.Duration // a replica's latency; default 5 ms
	SlowFactor int           // how many times slower the slow replica turns; default 10
	Workers    int           // callers in a closed loop; default 16
	Warmup     time.Duration // traffic before the healthy phase, not measured; default 500 ms
	Healthy    time.Duration // all replicas healthy, measured in slices of 250 ms taking the variants in turn; default 3 s
	Slow       time.Duration // replica 0 slow; default 3 s
	Recovered  time.Duration // replica 0 healthy again; default 2 s
	MinBudget  time.Duration // default 20 ms
	MaxBudget  time.Duration // default 500 ms
	Variants   []string      // default all of Variants
	Seed       uint64        // seeds the budgets' draws; the same for every variant
	// Fault is what replica 0 does in the slow phase: "slow" (the default:
	// its latency times SlowFactor), or one of Faults' codes, such as
	// "deadline_exceeded" (what a shedding grpcbudget server answers):
	// every call fails at once with that code.
	Fault string
}

// Faults are the codes replica 0 may fail every call with, by the names
// Config.Fault takes.
var Faults = map[string]codes.Code{
	"deadline_exceeded":  codes.DeadlineExceeded,
	"unknown":            codes.Unknown,
	"resource_exhausted": codes.ResourceExhausted,
	"unavailable":        codes.Unavailable,
	"internal":           codes.Internal,
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Base, 5*time.Millisecond)
	def(&c.Warmup, 500*time.Millisecond)
	def(&c.Healthy, 3*time.Second)
	def(&c.Slow, 3*time.Second)
	def(&c.Recovered, 2*time.Second)
	def(&c.MinBudget, 20*time.Millisecond)
	def(&c.MaxBudget, 500*time.Millisecond)
	if c.SlowFactor <= 0 {
		c.SlowFactor = 10
	}
	if c.Workers <= 0 {
		c.Workers = 16
	}
	if len(c.Variants) == 0 {
		c.Variants = Variants
	}
	return c
}

// Report is the result of a comparison, as the -json file holds it.
type Report struct {
	Runs []Run `json:"runs"`
}

// Run is one variant's figures. The figures named "while slow" cover the
// calls that started while replica 0 was slow; "healthy" ones cover the
// healthy phase before it.
type Run struct {
	Variant string `json:"variant"`
	// InBudget is the share of calls started while replica 0 was slow that
	// were answered within their budget.
	InBudget float64 `json:"in_budget"`
	// P99Ms is the 0.99 quantile, in milliseconds, of how long those calls
	// took (a call cut off by its deadline took its budget).
	P99Ms float64 `json:"p99_ms"`
	// SentToSlow is the share of those calls sent to replica 0.
	SentToSlow float64 `json:"sent_to_slow"`
	// RecoveryMs is how long after replica 0 recovered the first 100 ms
	// window ended in which it received at least 80 % of a fair share
	// (a third) of the calls started; -1 if none did.
	RecoveryMs float64 `json:"recovery_ms"`
	// HealthyP50Ms and HealthyRPS are the median latency and the calls
	// answered per second while every replica was healthy.
	HealthyP50Ms float64 `json:"healthy_p50_ms"`
	HealthyRPS   float64 `json:"healthy_rps"`
	// Calls counts every call of the measured phases; OK, Expired and
	// Failed split them by how they ended (answered, cut off by the
	// deadline, any other error) and sum to Calls.
	Calls   int `json:"calls"`
	OK      int `json:"ok"`
	Expired int `json:"expired"`
	Failed  int `json:"failed"`
}

// call is one call's record.
type call struct {
	start   time.Duration // since the measured phases began
	budget  time.Duration
	took    time.Duration
	ok      bool
	expired bool
	replica int // index of the replica that answered; -1 when unknown
}

// Compare runs every variant of cfg and returns their figures. The healthy
// figures are measured in rounds that take the variants in turn (each round
// in another order), so that a machine busy with other work weighs on every
// variant alike; the slow replica's scenario then runs for each variant in
// turn: a second of healthy traffic, the slow phase, the recovered phase.
func Compare(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	for _, v := range cfg.Variants {
		if _, ok := serviceConfigs[v]; !ok {
			return Report{}, fmt.Errorf("balance: unknown variant %q, want one of %v", v, Variants)
		}
	}
	failCode, failing := Faults[cfg.Fault]
	if !failing && cfg.Fault != "" && cfg.Fault != "slow" {
		return Report{}, fmt.Errorf("balance: unknown fault %q, want slow or one of %v", cfg.Fault, slices.Sorted(maps.Keys(Faults)))
	}
	reps := make([]*replica, 3)
	for i := range reps {
		r, err := startReplica(cfg.Base)
		if err != nil {
			return Report{}, fmt.Errorf("balance: starting replica %d: %w", i, err)
		}
		defer r.srv.Stop()
		reps[i] = r
	}
	index := map[string]int{}
	for i, r := range reps {
		index[r.addr] = i
	}
	clients := make([]*client, len(cfg.Variants))
	for i, v := range cfg.Variants {
		c, err := dial(ctx, v, reps, index)
		if err != nil {
			return Report{}, err
		}
		defer c.cc.Close()
		clients[i] = c
		c.drive(ctx, cfg, cfg.Warmup, nil)
	}
	healthy := make([][]call, len(clients))
	rounds := healthyRounds(cfg)
	slice := cfg.Healthy / time.Duration(rounds)
	for round := range rounds {
		for k := range clients {
			i := (k + round) % len(clients)
			healthy[i] = append(healthy[i], clients[i].drive(ctx, cfg, slice, nil)...)
		}
	}
	var rep Report
	for i, c := range clients {
		steps := []step{
			{at: lead, do: func() { reps[0].factor.Store(int64(cfg.SlowFactor)) }},
			{at: lead + cfg.Slow, do: func() { reps[0].factor.Store(1) }},
		}
		if failing {
			steps = []step{
				{at: lead, do: func() { reps[0].fail.Store(uint32(failCode)) }},
				{at: lead + cfg.Slow, do: func() { reps[0].fail.Store(uint32(codes.OK)) }},
			}
		}
		calls := c.drive(ctx, cfg, lead+cfg.Slow+cfg.Recovered, steps)
		reps[0].factor.Store(1)
		reps[0].fail.Store(uint32(codes.OK))
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Runs = append(rep.Runs, summarize(c.variant, cfg, healthy[i], calls))
	}
	return rep, nil
}

// healthySlice is the length of one slice of a variant's healthy phase.
const healthySlice = 250 * time.Millisecond

// healthyRounds is how many slices the healthy phase is measured in.
func healthyRounds(cfg Config) int { return max(1, int(cfg.Healthy/healthySlice)) }

// lead is the healthy traffic of a variant's scenario before its replica
// turns slow.
const lead = time.Second

// client is one variant's channel to the replicas.
type client struct {
	variant string
	cc      *grpc.ClientConn
	stub    grpc_testing.TestServiceClient
	index   map[string]int
	seed    uint64 // advanced by each drive, so that its budgets differ
}

func dial(ctx context.Context, variant string, reps []*replica, index map[string]int) (*client, error) {
	res := manual.NewBuilderWithScheme("balance")
	var eps []resolver.Endpoint
	for _, r := range reps {
		eps = append(eps, resolver.Endpoint{Addresses: []resolver.Address{{Addr: r.addr}}})
	}
	res.InitialState(resolver.State{Endpoints: eps})
	opts := []grpc.DialOption{grpc.WithResolvers(res),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(serviceConfigs[variant])}
	if variant == "weighted_round_robin" {
		opts = append(opts, grpc.WithUnaryInterceptor(askForLoad))
	}
	cc, err := grpc.NewClient(res.Scheme()+":///replicas", opts...)
	if err != nil {
		return nil, fmt.Errorf("balance: %s: %w", variant, err)
	}
	if err := waitReady(ctx, cc); err != nil {
		_ = cc.Close()
		return nil, fmt.Errorf("balance: %s: %w", variant, err)
	}
	return &client{variant: variant, cc: cc, stub: grpc_testing.NewTestServiceClient(cc), index: index}, nil
}

// askForLoad asks the replica for an ORCA load report with its answer.
func askForLoad(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(metadata.AppendToOutgoingContext(ctx, orcaKey, "1"), method, req, reply, cc, opts...)
}

// step is something to do at an offset into a drive.
type step struct {
	at time.Duration
	do func()
}

// drive runs cfg.Workers callers in a closed loop for d, doing each step at
// its offset, and returns the calls that started within d, their start
// relative to the drive's. Budgets are drawn from a seed that depends on
// cfg.Seed and on how many drives the client ran before, the same for every
// variant.
func (c *client) drive(ctx context.Context, cfg Config, d time.Duration, steps []step) []call {
	c.seed++
	origin := time.Now()
	var mu sync.Mutex
	var calls []call
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range cfg.Workers {
		rng := rand.New(rand.NewPCG(cfg.Seed, c.seed<<16|uint64(w)))
		wg.Go(func() {
			span := int64(cfg.MaxBudget - cfg.MinBudget)
			for {
				select {
				case <-stop:
					return
				default:
				}
				b := cfg.MinBudget + time.Duration(rng.Int64N(span+1))
				call := oneCall(ctx, c.stub, b, origin, c.index)
				if call.start >= d {
					return
				}
				mu.Lock()
				calls = append(calls, call)
				mu.Unlock()
			}
		})
	}
	for _, s := range steps {
		sleep(ctx, s.at-time.Since(origin))
		s.do()
	}
	sleep(ctx, d-time.Since(origin))
	close(stop)
	wg.Wait()
	return calls
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// waitReady connects cc and waits until it is ready.
func waitReady(ctx context.Context, cc *grpc.ClientConn) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cc.Connect()
	for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
		if !cc.WaitForStateChange(ctx, s) {
			return errors.New("the channel did not become ready within 20s")
		}
	}
	return nil
}

// oneCall makes one call with budget b and records it, its start relative
// to origin.
func oneCall(ctx context.Context, client grpc_testing.TestServiceClient, b time.Duration, origin time.Time, index map[string]int) call {
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, b)
	var p peer.Peer
	_, err := client.EmptyCall(cctx, &grpc_testing.Empty{}, grpc.Peer(&p))
	cancel()
	c := call{start: start.Sub(origin), budget: b, took: time.Since(start), ok: err == nil, replica: -1}
	if err != nil && status.Code(err) == codes.DeadlineExceeded {
		c.expired = true
	}
	if p.Addr != nil {
		if i, ok := index[p.Addr.String()]; ok {
			c.replica = i
		}
	}
	return c
}

// summarize computes a variant's figures from its calls.
func summarize(variant string, cfg Config, healthyCalls, calls []call) Run {
	run := Run{Variant: variant, Calls: len(healthyCalls) + len(calls), RecoveryMs: -1}
	slowAt, recAt := lead, lead+cfg.Slow
	var healthy, slow []time.Duration
	inBudget, toSlow, healthyOK := 0, 0, 0
	for _, c := range healthyCalls {
		healthy = append(healthy, c.took)
		if c.ok {
			healthyOK++
		}
	}
	for _, c := range append(slices.Clip(healthyCalls), calls...) {
		switch {
		case c.ok:
			run.OK++
		case c.expired:
			run.Expired++
		default:
			run.Failed++
		}
	}
	for _, c := range calls {
		if c.start >= slowAt && c.start < recAt {
			slow = append(slow, c.took)
			if c.ok && c.took <= c.budget {
				inBudget++
			}
			if c.replica == 0 {
				toSlow++
			}
		}
	}
	if len(slow) > 0 {
		run.InBudget = float64(inBudget) / float64(len(slow))
		run.SentToSlow = float64(toSlow) / float64(len(slow))
		run.P99Ms = ms(quantile(slow, 0.99))
	}
	if len(healthy) > 0 {
		run.HealthyP50Ms = ms(quantile(healthy, 0.5))
		rounds := time.Duration(healthyRounds(cfg))
		run.HealthyRPS = float64(healthyOK) / (rounds * (cfg.Healthy / rounds)).Seconds()
	}
	run.RecoveryMs = recovery(calls, recAt, cfg.Recovered)
	return run
}

// recoveryStep is the window recovery is read in.
const recoveryStep = 100 * time.Millisecond

// recovery returns the end, in milliseconds after recAt, of the first
// window of recoveryStep in which replica 0 received at least 80 % of a
// third of the calls started; -1 if none within span.
func recovery(calls []call, recAt, span time.Duration) float64 {
	n := int(span / recoveryStep)
	total, first := make([]int, n), make([]int, n)
	for _, c := range calls {
		if c.start < recAt || c.replica < 0 {
			continue
		}
		k := int((c.start - recAt) / recoveryStep)
		if k >= n {
			continue
		}
		total[k]++
		if c.replica == 0 {
			first[k]++
		}
	}
	for k := range n {
		if total[k] > 0 && float64(first[k]) >= 0.8*float64(total[k])/3 {
			return ms(time.Duration(k+1) * recoveryStep)
		}
	}
	return -1
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
