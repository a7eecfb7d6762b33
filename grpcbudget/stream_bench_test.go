package grpcbudget_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/interop/grpc_testing"

	"github.com/timebudget/budget/grpcbudget"
)

// plainDuplex is FullDuplexCall written as grpc-go alone allows: one loop,
// every message under the stream's context.
type plainDuplex struct {
	grpc_testing.UnimplementedTestServiceServer
	work time.Duration
}

func (p plainDuplex) FullDuplexCall(stream grpc_testing.TestService_FullDuplexCallServer) error {
	for {
		_, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		time.Sleep(p.work)
		if err := stream.Send(&grpc_testing.StreamingOutputCallResponse{}); err != nil {
			return err
		}
	}
}

// budgetDuplex is the same handler through EachMessage, each message under
// its own budget.
type budgetDuplex struct {
	grpc_testing.UnimplementedTestServiceServer
	work time.Duration
}

func (p budgetDuplex) FullDuplexCall(stream grpc_testing.TestService_FullDuplexCallServer) error {
	return grpcbudget.EachMessage(stream, func(ctx context.Context, _ *grpc_testing.StreamingOutputCallRequest) error {
		time.Sleep(p.work)
		return stream.Send(&grpc_testing.StreamingOutputCallResponse{})
	})
}

// BenchmarkStreamThroughput is the pair: a bidirectional stream of
// 10,000 messages, each handled in 1 ms, as grpc-go alone runs it (plain)
// and with a 1 s per-message budget on both sides (budget; and with a 1 s
// idle timeout as well, budget+idle). The three streams run at the same
// time, each on its own server and connection, so that they share whatever
// else the machine is doing: run one after another, a load that changes
// during the minute they take moves the ratio more than the budget does. It
// reports each stream's messages per second and the budget streams' ratios
// to plain; run it with -benchtime=1x (about 15 s).
func BenchmarkStreamThroughput(b *testing.B) {
	const msgs = 10_000
	const work = time.Millisecond
	variants := []struct {
		name   string
		svc    grpc_testing.TestServiceServer
		server []edge.ServerOption
		client []edge.ClientOption
	}{
		{"plain", plainDuplex{work: work}, nil, nil},
		{"budget", budgetDuplex{work: work},
			[]edge.ServerOption{grpcbudget.WithMessageBudget(time.Second)},
			[]edge.ClientOption{grpcbudget.WithMessageBudget(time.Second)}},
		{"budget+idle", budgetDuplex{work: work},
			[]edge.ServerOption{grpcbudget.WithMessageBudget(time.Second), grpcbudget.WithIdleTimeout(time.Second)},
			[]edge.ClientOption{grpcbudget.WithMessageBudget(time.Second), grpcbudget.WithIdleTimeout(time.Second)}},
	}
	clients := make([]grpc_testing.TestServiceClient, len(variants))
	for i, v := range variants {
		var srvOpts []grpc.ServerOption
		var dialOpts []grpc.DialOption
		if v.server != nil {
			srvOpts = streamServer(v.server...)
			dialOpts = []grpc.DialOption{grpc.WithChainStreamInterceptor(grpcbudget.StreamClientInterceptor(v.client...))}
		}
		clients[i] = serveService(b, v.svc, srvOpts, dialOpts...)
	}
	elapsed := make([]time.Duration, len(variants))
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		for i := range variants {
			wg.Go(func() {
				start := time.Now()
				if err := duplexRun(clients[i], msgs); err != nil {
					b.Error(err)
				}
				elapsed[i] += time.Since(start)
			})
		}
		wg.Wait()
	}
	rate := func(i int) float64 { return float64(msgs*b.N) / elapsed[i].Seconds() }
	for i, v := range variants {
		b.ReportMetric(rate(i), v.name+"-msgs/s")
		if i > 0 {
			b.ReportMetric(rate(i)/rate(0), v.name+"/plain")
		}
	}
}

// duplexRun sends n messages on one FullDuplexCall stream while reading the
// n answers.
func duplexRun(c grpc_testing.TestServiceClient, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := c.FullDuplexCall(ctx)
	if err != nil {
		return err
	}
	sent := make(chan error, 1)
	go func() {
		req := &grpc_testing.StreamingOutputCallRequest{}
		for range n {
			if err := st.Send(req); err != nil {
				sent <- err
				return
			}
		}
		sent <- st.CloseSend()
	}()
	for {
		if _, err := st.Recv(); err != nil {
			if err == io.EOF {
				return <-sent
			}
			return err
		}
	}
}

// BenchmarkIdleDetection measures how close to the idle timeout (50 ms) a
// client that stops sending is detected, over 100 streams, 10 at a time. The
// server's lag is how long its RecvMsg waited before giving up, less the
// timeout (the ledger entry's duration): the detection itself. The
// client's lag is the time from its last message to the stream's
// DEADLINE_EXCEEDED, less the timeout: detection plus the status's way back
// over loopback and the client's scheduling. It reports p50, p99 and the
// largest of each.
func BenchmarkIdleDetection(b *testing.B) {
	const idle = 50 * time.Millisecond
	obs := &events{}
	c, _ := serveStreams(b, streamServer(grpcbudget.WithIdleTimeout(idle), edge.WithObserver(obs)))
	var lags []time.Duration
	for b.Loop() {
		lags = append(lags, idleRounds(b, c, idle)...)
	}
	report := func(prefix string, lags []time.Duration) {
		p50, p99, worst := quantiles(lags)
		b.ReportMetric(float64(p50.Microseconds())/1000, prefix+"-p50-lag-ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, prefix+"-p99-lag-ms")
		b.ReportMetric(float64(worst.Microseconds())/1000, prefix+"-max-lag-ms")
	}
	report("server", serverLags(obs, idle))
	report("client", lags)
}

// serverLags returns how long after the idle timeout each stream recorded in
// obs was found idle.
func serverLags(obs *events, idle time.Duration) []time.Duration {
	var lags []time.Duration
	for _, ev := range obs.stage("client idle") {
		lags = append(lags, ev.Duration-idle)
	}
	return lags
}

// idleRounds runs 100 idle streams, 10 at a time, and returns their lags
// as the client sees them.
func idleRounds(t testing.TB, c grpc_testing.TestServiceClient, idle time.Duration) []time.Duration {
	var lags []time.Duration
	for range 10 {
		lags = append(lags, idleLags(t, c, 10, idle)...)
	}
	return lags
}

// quantiles returns the p50, p99 and largest of lags.
func quantiles(lags []time.Duration) (p50, p99, worst time.Duration) {
	s := slices.Clone(lags)
	slices.Sort(s)
	if len(s) == 0 {
		return 0, 0, 0
	}
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.5), at(0.99), s[len(s)-1]
}

// TestIdleDetectionEveryStream: of 100 streams whose client stops sending,
// every one is found idle by the server, none before the idle timeout, and
// within a second of it: a bound a busy machine keeps. How close to the
// timeout detection comes (the issue's ± 5 ms at p99) is a timing figure,
// which BenchmarkIdleDetection reports and BENCHMARKS.md records.
func TestIdleDetectionEveryStream(t *testing.T) {
	const idle = 50 * time.Millisecond
	obs := &events{}
	c, _ := serveStreams(t, streamServer(grpcbudget.WithIdleTimeout(idle), edge.WithObserver(obs)))
	idleRounds(t, c, idle)
	lags := serverLags(obs, idle)
	if len(lags) != 100 {
		t.Fatalf("%d of 100 idle streams found idle by the server", len(lags))
	}
	_, p99, worst := quantiles(lags)
	if early := slices.Min(lags); early < 0 {
		t.Errorf("a stream was found idle %v before the idle timeout", -early)
	}
	if worst > time.Second {
		t.Errorf("detection lag p99 %v, largest %v: want every stream within 1 s of the idle timeout", p99, worst)
	}
}

// serveService starts svc on loopback like serveStreams.
func serveService(t testing.TB, svc grpc_testing.TestServiceServer, srvOpts []grpc.ServerOption, dialOpts ...grpc.DialOption) grpc_testing.TestServiceClient {
	t.Helper()
	c, _ := serveStreamsWith(t, svc, srvOpts, dialOpts...)
	return c
}

// BenchmarkEachMessage is the per-message price of EachMessage with no
// network under it: a stream of 1,000 messages handed out at once, handled
// by a handler that does nothing, without a per-message budget (plain: the
// message context is a context.WithCancel) and with one (budget: a
// context.WithDeadlineCause per message). ns/op and allocs/op are per stream
// of 1,000 messages.
func BenchmarkEachMessage(b *testing.B) {
	const msgs = 1000
	for _, bc := range []struct {
		name string
		opts []edge.ServerOption
	}{{"plain", nil}, {"budget", []edge.ServerOption{grpcbudget.WithMessageBudget(time.Second)}}} {
		b.Run(bc.name, func(b *testing.B) {
			intercept := grpcbudget.StreamServerInterceptor(bc.opts...)
			handler := eachMessage(func(ctx context.Context, _ *grpc_testing.StreamingOutputCallRequest) error {
				_ = ctx.Done()
				return nil
			})
			b.ReportAllocs()
			for b.Loop() {
				_ = intercept(struct{}{}, &fakeServerStream{ctx: context.Background(), n: msgs}, duplexInfo, handler)
			}
		})
	}
}
