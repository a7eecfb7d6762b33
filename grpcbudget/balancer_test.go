package grpcbudget_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
)

// testBalancerName is the budget-aware balancer under a name of the tests',
// reporting ejections and recoveries to balancerEvents.
const testBalancerName = "budget_aware_test"

var balancerEvents eventLog

func init() {
	balancer.Register(grpcbudget.NewBalancerBuilder(testBalancerName, &balancerEvents))
}

// eventLog counts ejection and recovery events by replica address.
type eventLog struct {
	mu     sync.Mutex
	events []budget.Event
}

func (l *eventLog) Observe(_ context.Context, ev budget.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

// of returns the events of the replica at addr.
func (l *eventLog) of(addr string) []budget.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var evs []budget.Event
	for _, ev := range l.events {
		if strings.HasSuffix(ev.Stage, " "+addr) {
			evs = append(evs, ev)
		}
	}
	return evs
}

func (l *eventLog) count(kind budget.EventKind, addr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.events {
		if ev.Kind == kind && strings.HasSuffix(ev.Stage, " "+addr) {
			n++
		}
	}
	return n
}

// replica is a real gRPC server on loopback whose EmptyCall sleeps for its
// delay (or until the call's deadline) and counts the calls it receives;
// with a code set, it fails every call at once with that code.
type replica struct {
	grpc_testing.UnimplementedTestServiceServer
	addr  string
	delay atomic.Int64
	code  atomic.Uint32 // codes.Code; OK for none
	calls atomic.Int64
	srv   *grpc.Server
}

func (r *replica) EmptyCall(ctx context.Context, _ *grpc_testing.Empty) (*grpc_testing.Empty, error) {
	r.calls.Add(1)
	if c := codes.Code(r.code.Load()); c != codes.OK {
		return nil, status.Error(c, "failing at once")
	}
	t := time.NewTimer(time.Duration(r.delay.Load()))
	defer t.Stop()
	select {
	case <-t.C:
		return &grpc_testing.Empty{}, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

func startReplicas(t testing.TB, delays ...time.Duration) []*replica {
	t.Helper()
	reps := make([]*replica, len(delays))
	for i, d := range delays {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		r := &replica{addr: lis.Addr().String(), srv: grpc.NewServer()}
		r.delay.Store(int64(d))
		grpc_testing.RegisterTestServiceServer(r.srv, r)
		go func() { _ = r.srv.Serve(lis) }()
		t.Cleanup(r.srv.Stop)
		reps[i] = r
	}
	return reps
}

// dialBalanced opens a channel to reps through a manual resolver, with the
// load balancing policy named lb in its service config, and waits until
// every replica has answered once.
func dialBalanced(t testing.TB, lb string, reps []*replica) grpc_testing.TestServiceClient {
	t.Helper()
	res := manual.NewBuilderWithScheme("balancertest")
	var eps []resolver.Endpoint
	for _, r := range reps {
		eps = append(eps, resolver.Endpoint{Addresses: []resolver.Address{{Addr: r.addr}}})
	}
	res.InitialState(resolver.State{Endpoints: eps})
	cc, err := grpc.NewClient(res.Scheme()+":///replicas",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithResolvers(res),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"`+lb+`":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	client := grpc_testing.NewTestServiceClient(cc)
	// Until every endpoint is ready, calls go to those that are: call until
	// each replica has seen one, with time enough for any of them.
	deadline := time.Now().Add(20 * time.Second)
	for !allCalled(reps) {
		if time.Now().After(deadline) {
			t.Fatal("not every replica was reached within 20s")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := client.EmptyCall(ctx, &grpc_testing.Empty{}, grpc.WaitForReady(true))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	return client
}

func allCalled(reps []*replica) bool {
	for _, r := range reps {
		if r.calls.Load() == 0 {
			return false
		}
	}
	return true
}

// callMany makes n calls from workers goroutines, each with the timeout
// budget(i) for its i-th call, and returns the calls that failed with a
// code other than DEADLINE_EXCEEDED.
func callMany(client grpc_testing.TestServiceClient, workers, n int, budget func(i int) time.Duration) []error {
	var next atomic.Int64
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), budget(i))
				_, err := client.EmptyCall(ctx, &grpc_testing.Empty{})
				cancel()
				if err != nil && status.Code(err) != codes.DeadlineExceeded {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errs
}

func counts(reps []*replica) []int64 {
	c := make([]int64, len(reps))
	for i, r := range reps {
		c[i] = r.calls.Load()
	}
	return c
}

func delta(before, after []int64) (each []int64, total int64) {
	each = make([]int64, len(before))
	for i := range before {
		each[i] = after[i] - before[i]
		total += each[i]
	}
	return each, total
}

// A replica that turns 20 times slower is ejected and receives only probes
// (calls with time for its latency), tight-budget calls avoid it, and once
// it is fast again it is recovered and gets its share back.
func TestBalancerAvoidsSlowReplicaAndSeesRecovery(t *testing.T) {
	// Latencies well above a busy machine's pauses, so that noise does not
	// eject a fast replica.
	const fast, slow = 10 * time.Millisecond, 200 * time.Millisecond
	reps := startReplicas(t, fast, fast, fast)
	client := dialBalanced(t, testBalancerName, reps)
	mixed := func(i int) time.Duration { // one call in two tight, one loose
		if i%2 == 0 {
			return 80 * time.Millisecond
		}
		return 2 * time.Second
	}
	if errs := callMany(client, 16, 300, mixed); len(errs) > 0 {
		t.Fatalf("healthy warm-up: %d calls failed, first: %v", len(errs), errs[0])
	}

	reps[0].delay.Store(int64(slow))
	// Let the balancer see the slowdown, then measure.
	if errs := callMany(client, 16, 300, mixed); len(errs) > 0 {
		t.Fatalf("while slow: %d calls failed, first: %v", len(errs), errs[0])
	}
	before := counts(reps)
	if errs := callMany(client, 16, 1200, mixed); len(errs) > 0 {
		t.Fatalf("while slow: %d calls failed, first: %v", len(errs), errs[0])
	}
	each, total := delta(before, counts(reps))
	t.Logf("while replica 0 is slow: %v of %d calls", each, total)
	// Probes are 1 % of calls; round robin would send a third. 10 % leaves
	// room for a busy machine.
	if share := float64(each[0]) / float64(total); share > 0.10 {
		t.Errorf("the slow replica received %.1f %% of calls, want at most 10 %% (probes)", 100*share)
	}
	if each[0] == 0 {
		t.Error("the slow replica received no probe in 1200 calls")
	}
	if n := balancerEvents.count(budget.EventEject, reps[0].addr); n == 0 {
		t.Error("no ejection event for the slow replica")
	}
	// Calls with less time than the slow replica needs are never sent there,
	// not even as probes.
	before = counts(reps)
	if errs := callMany(client, 16, 400, func(int) time.Duration { return 80 * time.Millisecond }); len(errs) > 0 {
		t.Fatalf("tight calls while slow: %d failed, first: %v", len(errs), errs[0])
	}
	each, total = delta(before, counts(reps))
	t.Logf("tight calls while replica 0 is slow: %v of %d", each, total)
	if float64(each[0]) > 0.05*float64(total) {
		t.Errorf("the slow replica received %d of %d calls with 80 ms left, want at most 5 %%", each[0], total)
	}

	reps[0].delay.Store(int64(fast))
	// Probes go every 100 calls; recovery takes a few of them.
	if errs := callMany(client, 16, 1500, mixed); len(errs) > 0 {
		t.Fatalf("after recovery: %d calls failed, first: %v", len(errs), errs[0])
	}
	before = counts(reps)
	if errs := callMany(client, 16, 900, mixed); len(errs) > 0 {
		t.Fatalf("after recovery: %d calls failed, first: %v", len(errs), errs[0])
	}
	each, total = delta(before, counts(reps))
	t.Logf("after replica 0 recovered: %v of %d calls", each, total)
	if share := float64(each[0]) / float64(total); share < 0.12 {
		t.Errorf("the recovered replica received %.1f %% of calls, want at least 12 %% (a fair share is 33 %%, probes 1 %%)", 100*share)
	}
	if n := balancerEvents.count(budget.EventRecover, reps[0].addr); n == 0 {
		t.Error("no recovery event for the recovered replica")
	}
}

// When no replica can answer in the time a call has left, the call still
// goes out, to the replica with the best expected completion, and ends with
// DEADLINE_EXCEEDED (admission, when configured, refuses it earlier).
func TestBalancerNoneFitsPicksBest(t *testing.T) {
	reps := startReplicas(t, 30*time.Millisecond, 60*time.Millisecond, 90*time.Millisecond)
	client := dialBalanced(t, testBalancerName, reps)
	// Learn every replica's latency with loose budgets (one caller, so that
	// calls in flight do not weigh).
	for range 30 {
		if errs := callMany(client, 3, 3, func(int) time.Duration { return 2 * time.Second }); len(errs) > 0 {
			t.Fatal(errs[0])
		}
	}
	before := counts(reps)
	errs := callMany(client, 1, 40, func(int) time.Duration { return 10 * time.Millisecond })
	if len(errs) > 0 {
		t.Fatalf("%d calls failed with a code other than DEADLINE_EXCEEDED, first: %v", len(errs), errs[0])
	}
	each, total := delta(before, counts(reps))
	t.Logf("tight calls: %v of %d", each, total)
	if total < 30 {
		t.Fatalf("only %d of 40 calls reached a replica; none fitting should still pick one", total)
	}
	if float64(each[0]) < 0.7*float64(total) {
		t.Errorf("the fastest replica received %d of %d calls, want at least 70 %%", each[0], total)
	}
}

// A balancer config the budget-aware balancer cannot use is refused with an
// error naming the field.
func TestBalancerBadConfig(t *testing.T) {
	b := balancer.Get(grpcbudget.BalancerName)
	if b == nil {
		t.Fatal(grpcbudget.BalancerName + " is not registered")
	}
	p, ok := b.(balancer.ConfigParser)
	if !ok {
		t.Fatal("the balancer parses no config")
	}
	for raw, names := range map[string]string{
		`{"probeEvery":-1}`:                  "probeEvery",
		`{"ejectFactor":0.5}`:                "ejectFactor",
		`{"ejectFactor":1000}`:               "ejectFactor",
		`{"probeEvery":"x"}`:                 "probeEvery",
		`{"probeEvry":5}`:                    "probeEvry",
		`{"probeEvery":1}`:                   "probeEvery",
		`{"probeEvery":0}`:                   "probeEvery",
		`{"probeEvery":2.5}`:                 "probeEvery",
		`{"probeEvery":9223372036854775808}`: "probeEvery",
		`{"probeEvery":10001}`:               "probeEvery",
		`{"probeEvery":5}{}`:                 "more than one",
		`[]`:                                 "budget_aware",
	} {
		_, err := p.ParseConfig([]byte(raw))
		if err == nil || !strings.Contains(err.Error(), "budget_aware") || !strings.Contains(err.Error(), names) {
			t.Errorf("ParseConfig(%s) = %v, want an error naming the balancer and %q", raw, err, names)
		}
	}
	for _, raw := range []string{`{"probeEvery":50,"ejectFactor":3}`, `{}`, ``, `null`, `{"probeEvery":2}`, `{"probeEvery":10000,"ejectFactor":100}`} {
		if _, err := p.ParseConfig([]byte(raw)); err != nil {
			t.Errorf("a good config %q: %v", raw, err)
		}
	}
}

// callAll makes n calls from workers goroutines, each with budget, and
// returns how many failed, whatever the code.
func callAll(client grpc_testing.TestServiceClient, workers, n int, budget time.Duration) int {
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				ctx, cancel := context.WithTimeout(context.Background(), budget)
				if _, err := client.EmptyCall(ctx, &grpc_testing.Empty{}); err != nil {
					failed.Add(1)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	return int(failed.Load())
}

// A replica that fails every call at once, with DEADLINE_EXCEEDED (what a
// shedding grpcbudget server answers), UNKNOWN or RESOURCE_EXHAUSTED, is
// never taken for the fastest: it gets at most 5 % of the calls (it is
// ejected after a few failures and then gets only probes), at most 10 % of
// the calls fail, the healthy replicas are not kept out, and once it answers
// again it gets its share back.
func TestBalancerFastFailingReplica(t *testing.T) {
	for _, code := range []codes.Code{codes.DeadlineExceeded, codes.Unknown, codes.ResourceExhausted} {
		t.Run(code.String(), func(t *testing.T) {
			// Latencies well above a busy machine's pauses, so that noise
			// ejects no healthy replica.
			reps := startReplicas(t, 10*time.Millisecond, 10*time.Millisecond, 10*time.Millisecond)
			client := dialBalanced(t, testBalancerName, reps)
			if failed := callAll(client, 8, 300, time.Second); failed > 0 {
				t.Fatalf("healthy warm-up: %d calls failed", failed)
			}
			// Events before the fault (a first call that also set up the
			// connection may eject a replica for a moment) do not count.
			ejects := make([]int, len(reps))
			for i, r := range reps {
				ejects[i] = balancerEvents.count(budget.EventEject, r.addr)
			}
			reps[0].code.Store(uint32(code))
			const n = 2000
			before := counts(reps)
			failed := callAll(client, 8, n, time.Second)
			each, total := delta(before, counts(reps))
			t.Logf("replica 0 failing with %v: %v of %d calls, %d failed", code, each, total, failed)
			if failed > n/10 {
				t.Errorf("%d of %d calls failed, want at most 10 %%", failed, n)
			}
			if each[0] > total/20 {
				t.Errorf("the failing replica received %d of %d calls, want at most 5 %%", each[0], total)
			}
			if balancerEvents.count(budget.EventEject, reps[0].addr) == ejects[0] {
				t.Error("no ejection event for the failing replica")
			}

			reps[0].code.Store(uint32(codes.OK))
			// Probes go one call in 100; the first that succeeds brings
			// the replica back.
			if failed := callAll(client, 8, 500, time.Second); failed > 0 {
				t.Fatalf("after the fault: %d calls failed", failed)
			}
			before = counts(reps)
			callAll(client, 8, 900, time.Second)
			each, total = delta(before, counts(reps))
			t.Logf("after the fault: %v of %d calls", each, total)
			if share := float64(each[0]) / float64(total); share < 0.12 {
				t.Errorf("the recovered replica received %.1f %% of calls, want at least 12 %% (a fair share is 33 %%)", 100*share)
			}
			if balancerEvents.count(budget.EventRecover, reps[0].addr) == 0 {
				t.Error("no recovery event for the replica")
			}
			// The healthy replicas are not taken for failing: on a machine
			// so busy that a 10 ms call takes hundreds, one may be ejected
			// for a moment, as a slow replica should be, but none twice
			// and none kept out (before the fix both were, for good).
			for i, r := range reps[1:] {
				k := balancerEvents.count(budget.EventEject, r.addr) - ejects[i+1]
				if k > 1 || k > 0 && lastOf(balancerEvents.of(r.addr)) != budget.EventRecover {
					t.Errorf("healthy replica %s was ejected %d times: %v", r.addr, k, balancerEvents.of(r.addr))
				}
			}
		})
	}
}

// lastOf returns the kind of the last ejection or recovery among evs.
func lastOf(evs []budget.Event) budget.EventKind {
	var last budget.EventKind
	for _, ev := range evs {
		if ev.Kind == budget.EventEject || ev.Kind == budget.EventRecover {
			last = ev.Kind
		}
	}
	return last
}

// A replica that hangs (answers nothing until each call's deadline) gets at
// most 5 % of the calls, at most 10 % of the calls fail, and once it answers
// again it gets its share back: probes that answer fast bring it back, and
// the cut-offs of the calls it held no longer count.
func TestBalancerHangingReplica(t *testing.T) {
	reps := startReplicas(t, 10*time.Millisecond, 10*time.Millisecond, 10*time.Millisecond)
	client := dialBalanced(t, testBalancerName, reps)
	const budget = 300 * time.Millisecond
	if failed := callAll(client, 8, 300, budget); failed > 0 {
		t.Fatalf("healthy warm-up: %d calls failed", failed)
	}
	reps[0].delay.Store(int64(time.Hour))
	const n = 2000
	before := counts(reps)
	failed := callAll(client, 8, n, budget)
	each, total := delta(before, counts(reps))
	t.Logf("replica 0 hanging: %v of %d calls, %d failed", each, total, failed)
	if failed > n/10 {
		t.Errorf("%d of %d calls failed, want at most 10 %%", failed, n)
	}
	if each[0] > total/20 {
		t.Errorf("the hanging replica received %d of %d calls, want at most 5 %%", each[0], total)
	}
	reps[0].delay.Store(int64(10 * time.Millisecond))
	// The bound: 5 × 100 calls, plus one per caller and per replica, once
	// the calls it held (300 ms at most) have ended.
	callAll(client, 8, 1000, budget)
	before = counts(reps)
	callAll(client, 8, 900, budget)
	each, total = delta(before, counts(reps))
	t.Logf("after the fault: %v of %d calls", each, total)
	if share := float64(each[0]) / float64(total); share < 0.12 {
		t.Errorf("the recovered replica received %.1f %% of calls, want at least 12 %% (a fair share is 33 %%)", 100*share)
	}
}
