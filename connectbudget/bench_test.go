package connectbudget_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/wire"
)

func bareUnary(context.Context, connect.AnyRequest) (connect.AnyResponse, error) { return nil, nil }

// benchRequest is what connect-go hands a server interceptor for a call
// that carries Connect-Timeout-Ms and our two headers, with the deadline
// connect-go derived from Connect-Timeout-Ms on the context.
func benchRequest(tb testing.TB) (context.Context, connect.AnyRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	tb.Cleanup(cancel)
	req := connect.NewRequest(&str{})
	req.Header().Set("Connect-Timeout-Ms", "1500")
	req.Header().Set("Request-Timeout-Ms", "1500")
	dl, _ := wire.FormatRequestDeadline(time.Now().Add(time.Hour))
	req.Header().Set("Request-Deadline", dl)
	req.Header().Set("Content-Type", "application/proto")
	return ctx, req
}

func benchServer(b *testing.B, ic connect.Interceptor) {
	b.ReportAllocs()
	ctx, req := benchRequest(b)
	u := ic.WrapUnary(bareUnary)
	for b.Loop() {
		if _, err := u(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// passThrough is the floor: an interceptor that only calls the next one.
type passThrough struct{ connect.Interceptor }

func (passThrough) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) { return next(ctx, req) }
}

// BenchmarkHandlerDirect is the floor: the handler called through an
// interceptor that does nothing.
func BenchmarkHandlerDirect(b *testing.B) { benchServer(b, passThrough{}) }

// BenchmarkServerInterceptor is the default policy over the bare handler.
func BenchmarkServerInterceptor(b *testing.B) { benchServer(b, connectbudget.NewServerInterceptor()) }

// BenchmarkServerInterceptorShed is a call the policy refuses on arrival.
func BenchmarkServerInterceptorShed(b *testing.B) {
	b.ReportAllocs()
	ctx, req := benchRequest(b)
	u := connectbudget.NewServerInterceptor(edge.WithPolicy(&wire.Policy{Min: time.Hour * 2})).WrapUnary(bareUnary)
	for b.Loop() {
		if _, err := u(ctx, req); err == nil {
			b.Fatal("not shed")
		}
	}
}

// stop ends a client's interceptor chain without a network call.
var stop = connect.UnaryInterceptorFunc(func(connect.UnaryFunc) connect.UnaryFunc {
	return func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) {
		return connect.NewResponse(&str{}), nil
	}
})

// benchClient is a connect-go client whose calls go through ic and end
// before the network.
func benchClient(ic connect.Interceptor) *connect.Client[str, str] {
	return connect.NewClient[str, str](nil, "http://127.0.0.1/svc/M", connect.WithInterceptors(ic, stop))
}

// BenchmarkClientDirect is the floor: a client call ended before the
// network, through an interceptor that does nothing.
func BenchmarkClientDirect(b *testing.B) { benchClientCall(b, passThrough{}) }

// BenchmarkClientInterceptor is the same call with a budget through the
// client interceptor: the refusal check and the two headers.
func BenchmarkClientInterceptor(b *testing.B) {
	benchClientCall(b, connectbudget.NewClientInterceptor())
}

func benchClientCall(b *testing.B, ic connect.Interceptor) {
	b.ReportAllocs()
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	c := benchClient(ic)
	req := connect.NewRequest(&str{})
	for b.Loop() {
		if _, err := c.CallUnary(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

func TestInterceptorAllocations(t *testing.T) {
	ctx, req := benchRequest(t)
	server := func(ic connect.Interceptor) float64 {
		u := ic.WrapUnary(bareUnary)
		return testing.AllocsPerRun(500, func() { _, _ = u(ctx, req) })
	}
	bctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	client := func(ic connect.Interceptor) float64 {
		c := benchClient(ic)
		creq := connect.NewRequest(&str{})
		return testing.AllocsPerRun(500, func() { _, _ = c.CallUnary(bctx, creq) })
	}
	// Measured: the server's budget (the deadline context's timer and
	// the budget's context, state and ledger) is 5; a shed call allocates
	// its refusal and connect's error (2) and the Budget-No-Retry header
	// of its metadata (the map, its bucket and the value's slice: 3). The
	// client adds the two header values and their slices (4) to what a
	// bare connect-go call costs.
	const maxServer, maxShed, maxClientExtra = 5, 5, 4
	if got := server(connectbudget.NewServerInterceptor()); got > maxServer {
		t.Errorf("server interceptor: %v allocations, want at most %d", got, maxServer)
	}
	if got := server(connectbudget.NewServerInterceptor(edge.WithPolicy(&wire.Policy{Min: 2 * time.Hour}))); got > maxShed {
		t.Errorf("server interceptor, shed call: %v allocations, want at most %d", got, maxShed)
	}
	floor := client(passThrough{})
	if got := client(connectbudget.NewClientInterceptor()); got > floor+maxClientExtra {
		t.Errorf("client interceptor: %v allocations, want at most %v (a bare call's %v and %d)", got, floor+maxClientExtra, floor, maxClientExtra)
	}
}

// BenchmarkRoundTrip is a whole unary call over loopback h2c with the
// Connect protocol: plain connect-go (the baseline), and with the
// interceptors on both sides.
func BenchmarkRoundTrip(b *testing.B) {
	for _, withBudget := range []bool{false, true} {
		name := "plain"
		if withBudget {
			name = "interceptors"
		}
		b.Run(name, func(b *testing.B) {
			var hopts []connect.HandlerOption
			var copts []connect.ClientOption
			if withBudget {
				hopts = append(hopts, connect.WithInterceptors(connectbudget.NewServerInterceptor()))
				copts = append(copts, connect.WithInterceptors(connectbudget.NewClientInterceptor()))
			}
			url, hc := serve(b, transports[1], new(service), hopts...)
			c := unaryClient(hc, url, copts...)
			ctx, cancel := budget.Start(context.Background(), time.Hour)
			defer cancel()
			req := connect.NewRequest(&str{Value: "hi"})
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.CallUnary(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
