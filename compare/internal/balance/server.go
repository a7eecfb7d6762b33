package balance

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/orca"
	"google.golang.org/grpc/status"
)

// orcaKey is the metadata that asks a replica for an ORCA load report. The
// other variants do not ask: a channel whose balancer watches calls' ends
// parses every answer's report, which would cost them CPU for nothing.
const orcaKey = "want-orca"

// capacity is the number of calls in flight a replica counts as full
// utilization in its ORCA reports.
const capacity = 16

// replica is one gRPC server on loopback. Its EmptyCall waits for its base
// latency times its factor (a sleep, so that the latency holds on a busy
// machine: it takes no CPU), or until the call's deadline. Every answer
// carries an ORCA load report (per-call, in the trailer) for
// weighted_round_robin: the replica's queries per second over the last
// second and its utilization, the average calls in flight over capacity.
type replica struct {
	grpc_testing.UnimplementedTestServiceServer
	addr   string
	base   time.Duration
	factor atomic.Int64
	fail   atomic.Uint32 // a codes.Code every call fails with at once; OK for none
	srv    *grpc.Server

	inflight atomic.Int64
	mu       sync.Mutex
	window   time.Time // start of the current one-second window
	calls    int       // calls that ended in the current window
	prevQPS  float64   // calls of the last whole window
	util     float64   // smoothed in-flight count over capacity
}

func startReplica(base time.Duration) (*replica, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &replica{addr: lis.Addr().String(), base: base, window: time.Now()}
	r.factor.Store(1)
	r.srv = grpc.NewServer(orca.CallMetricsServerOption(nil))
	grpc_testing.RegisterTestServiceServer(r.srv, r)
	go func() { _ = r.srv.Serve(lis) }()
	return r, nil
}

// EmptyCall answers after the replica's latency, or at once with its fault's
// code.
func (r *replica) EmptyCall(ctx context.Context, _ *grpc_testing.Empty) (*grpc_testing.Empty, error) {
	if c := codes.Code(r.fail.Load()); c != codes.OK {
		return nil, status.Error(c, "replica failing")
	}
	n := r.inflight.Add(1)
	defer r.inflight.Add(-1)
	t := time.NewTimer(r.base * time.Duration(r.factor.Load()))
	defer t.Stop()
	var err error
	select {
	case <-t.C:
	case <-ctx.Done():
		err = status.FromContextError(ctx.Err()).Err()
	}
	qps, util := r.load(n)
	if md, _ := metadata.FromIncomingContext(ctx); len(md.Get(orcaKey)) > 0 {
		rec := orca.CallMetricsRecorderFromContext(ctx)
		rec.SetQPS(qps)
		rec.SetApplicationUtilization(util)
		rec.SetCPUUtilization(util)
	}
	if err != nil {
		return nil, err
	}
	return &grpc_testing.Empty{}, nil
}

// load counts a call that ended with n calls in flight and returns the
// replica's queries per second and utilization.
func (r *replica) load(n int64) (qps, util float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if el := now.Sub(r.window); el >= time.Second {
		r.prevQPS = float64(r.calls) / el.Seconds()
		r.window, r.calls = now, 0
	}
	r.calls++
	r.util += 0.1 * (float64(n)/capacity - r.util)
	qps = r.prevQPS
	if el := now.Sub(r.window).Seconds(); qps == 0 && el > 0 {
		qps = float64(r.calls) / el
	}
	return max(qps, 1), max(r.util, 0.001)
}
