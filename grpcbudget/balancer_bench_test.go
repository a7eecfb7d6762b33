package grpcbudget_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/roundrobin"
	"google.golang.org/grpc/serviceconfig"

	"github.com/timebudget/budget/grpcbudget"
)

// capturePrefix names the balancers that wrap a registered one and keep the
// last picker it handed the channel, so that a benchmark can call a real
// picker, over real subchannels, directly.
const capturePrefix = "capture_"

var captured sync.Map // balancer name -> balancer.Picker

func init() {
	for _, name := range []string{roundrobin.Name, grpcbudget.BalancerName} {
		balancer.Register(captureBuilder{inner: balancer.Get(name)})
	}
}

type captureBuilder struct{ inner balancer.Builder }

func (c captureBuilder) Name() string { return capturePrefix + c.inner.Name() }

func (c captureBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return c.inner.Build(captureCC{ClientConn: cc, name: c.inner.Name()}, opts)
}

func (c captureBuilder) ParseConfig(raw []byte) (serviceconfig.LoadBalancingConfig, error) {
	if p, ok := c.inner.(balancer.ConfigParser); ok {
		return p.ParseConfig(raw)
	}
	return nil, nil
}

type captureCC struct {
	balancer.ClientConn
	name string
}

func (c captureCC) UpdateState(s balancer.State) {
	captured.Store(c.name, s.Picker)
	c.ClientConn.UpdateState(s)
}

// readyPicker returns the picker that name's balancer uses over three ready
// replicas that answer at once.
func readyPicker(tb testing.TB, name string) balancer.Picker {
	tb.Helper()
	reps := startReplicas(tb, 0, 0, 0)
	dialBalanced(tb, capturePrefix+name, reps)
	p, ok := captured.Load(name)
	if !ok {
		tb.Fatalf("%s handed the channel no picker", name)
	}
	return p.(balancer.Picker)
}

func pickAndDone(p balancer.Picker, info balancer.PickInfo) error {
	res, err := p.Pick(info)
	if err != nil {
		return err
	}
	if res.Done != nil {
		res.Done(balancer.DoneInfo{})
	}
	return nil
}

// BenchmarkPick compares the budget-aware picker with round_robin's, both
// over three ready subchannels of a real channel, in the same run: a pick
// and the report of the call's end.
func BenchmarkPick(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	info := balancer.PickInfo{FullMethodName: "/grpc.testing.TestService/EmptyCall", Ctx: ctx}
	for _, name := range []string{roundrobin.Name, grpcbudget.BalancerName} {
		p := readyPicker(b, name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := pickAndDone(p, info); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A budget-aware pick, with the report of the call's end, allocates
// nothing.
func TestBalancerPickAllocs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	info := balancer.PickInfo{FullMethodName: "/grpc.testing.TestService/EmptyCall", Ctx: ctx}
	p := readyPicker(t, grpcbudget.BalancerName)
	if n := testing.AllocsPerRun(1000, func() {
		if err := pickAndDone(p, info); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a pick allocates %v times, want 0", n)
	}
}
