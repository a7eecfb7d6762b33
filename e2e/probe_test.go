package e2e_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	amqp "github.com/rabbitmq/amqp091-go"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/interop/grpc_testing"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/amqpbudget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// probeHealth answers Check and records whether the call arrived as a probe.
type probeHealth struct {
	healthpb.UnimplementedHealthServer
	probe atomic.Bool
}

func (h *probeHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.probe.Store(budget.IsProbe(ctx))
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// TestProbeMarkCrossesTheWire: a call whose context is marked as a probe
// (budget.WithProbe) arrives as a probe through httpbudget's Transport and
// handler, grpcbudget's and connectbudget's interceptors and amqpbudget's
// Stamp and Consumer, with and without a deadline; a call not marked arrives
// unmarked; and a server whose policy trusts nothing ignores the mark.
func TestProbeMarkCrossesTheWire(t *testing.T) {
	t.Parallel()
	policies := []struct {
		name   string
		policy *wire.Policy
		trust  bool
	}{
		{"trusted", &wire.Policy{}, true},
		{"probe trusted alone", &wire.Policy{Trust: wire.SourceProbe}, true},
		{"edge trusts nothing", &wire.Policy{Trust: wire.SourcesNone, Max: time.Minute}, false},
	}
	transports := []struct {
		name string
		call func(t *testing.T, p *wire.Policy, ctx context.Context) bool // reports whether the handler saw a probe
	}{
		{"HTTP", probeViaHTTP}, {"gRPC", probeViaGRPC}, {"Connect", probeViaConnect}, {"AMQP", probeViaAMQP},
	}
	for _, tr := range transports {
		for _, pc := range policies {
			for _, deadline := range []bool{true, false} {
				for _, marked := range []bool{true, false} {
					ctx := context.Background()
					if deadline {
						var cancel context.CancelFunc
						ctx, cancel = budget.Start(ctx, 10*time.Second)
						defer cancel()
					}
					if marked {
						ctx = budget.WithProbe(ctx)
					}
					got := tr.call(t, pc.policy, ctx)
					if want := marked && pc.trust; got != want {
						t.Errorf("%s, %s, deadline %v, marked %v: handler saw probe %v, want %v",
							tr.name, pc.name, deadline, marked, got, want)
					}
				}
			}
		}
	}
}

func probeViaHTTP(t *testing.T, p *wire.Policy, ctx context.Context) bool {
	var probe atomic.Bool
	srv := httptest.NewServer(httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probe.Store(budget.IsProbe(r.Context()))
	}), edge.WithPolicy(p)))
	defer srv.Close()
	client := &http.Client{Transport: httpbudget.NewTransport(srv.Client().Transport)}
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return probe.Load()
}

func probeViaGRPC(t *testing.T, p *wire.Policy, ctx context.Context) bool {
	h := new(probeHealth)
	addr, stop := startHealth(t, h, edge.WithPolicy(p))
	defer stop()
	conn := dialHealth(t, addr)
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	return h.probe.Load()
}

func probeViaConnect(t *testing.T, p *wire.Policy, ctx context.Context) bool {
	var probe atomic.Bool
	h := connect.NewUnaryHandler(unaryCall,
		func(ctx context.Context, _ *connect.Request[grpc_testing.SimpleRequest]) (*connect.Response[grpc_testing.SimpleResponse], error) {
			probe.Store(budget.IsProbe(ctx))
			return connect.NewResponse(&grpc_testing.SimpleResponse{}), nil
		}, connect.WithInterceptors(connectbudget.NewServerInterceptor(edge.WithPolicy(p))))
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := connect.NewClient[grpc_testing.SimpleRequest, grpc_testing.SimpleResponse](srv.Client(), srv.URL+unaryCall,
		connect.WithInterceptors(connectbudget.NewClientInterceptor()))
	if _, err := client.CallUnary(ctx, connect.NewRequest(&grpc_testing.SimpleRequest{})); err != nil {
		t.Fatal(err)
	}
	return probe.Load()
}

func probeViaAMQP(t *testing.T, p *wire.Policy, ctx context.Context) bool {
	var msg amqp.Publishing
	if err := amqpbudget.Stamp(ctx, &msg); err != nil {
		t.Fatal(err)
	}
	var probe bool
	c := &amqpbudget.Consumer{Policy: p, Handler: func(ctx context.Context, _ amqp.Delivery) error {
		probe = budget.IsProbe(ctx)
		return nil
	}}
	d := amqp.Delivery{Acknowledger: new(acks), Headers: msg.Headers, Expiration: msg.Expiration, Timestamp: msg.Timestamp}
	if err := c.Handle(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	return probe
}
