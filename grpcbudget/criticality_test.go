package grpcbudget_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

// hop answers EmptyCall: it records the class it runs with and, when it
// has a next hop, calls it first.
type hop struct {
	grpc_testing.UnimplementedTestServiceServer
	next grpc_testing.TestServiceClient
	seen chan string
}

func (h *hop) EmptyCall(ctx context.Context, e *grpc_testing.Empty) (*grpc_testing.Empty, error) {
	if h.next != nil {
		return h.next.EmptyCall(ctx, e)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	_, deadline := ctx.Deadline()
	s := budget.CriticalityFrom(ctx).String() + " " + one(md["request-criticality"])
	if deadline {
		s += " deadline"
	}
	h.seen <- s
	return e, nil
}

func one(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// start serves h on loopback with opts and returns a client dialed with
// dial; both stop when the test ends.
func start(t *testing.T, h *hop, opts []grpc.ServerOption, dial ...grpc.DialOption) grpc_testing.TestServiceClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	grpc_testing.RegisterTestServiceServer(srv, h)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dial...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		<-done
	})
	return grpc_testing.NewTestServiceClient(conn)
}

// byTier is an edge's classifier: the caller's tier, as an authenticating
// proxy in front would set it (here, metadata the test sends).
func byTier(ctx context.Context, _ string) budget.Criticality {
	md, _ := metadata.FromIncomingContext(ctx)
	c, _ := budget.ParseCriticality(one(md["x-tier"]))
	return c
}

// A class set at a gRPC edge by its classifier crosses two hops as
// request-criticality metadata, with or without a deadline; the edge
// ignores the class a client sends.
func TestCriticalityAcrossTwoGRPCHops(t *testing.T) {
	t.Parallel()
	last := &hop{seen: make(chan string, 1)}
	backend := start(t, last, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpcbudget.UnaryServerInterceptor())},
		grpc.WithChainUnaryInterceptor(grpcbudget.UnaryClientInterceptor()))
	edge := func(p *wire.Policy, classify bool) grpc_testing.TestServiceClient {
		opts := []edge.ServerOption{edge.WithPolicy(p)}
		if classify {
			opts = append(opts, grpcbudget.WithClassifier(byTier))
		}
		return start(t, &hop{next: backend}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpcbudget.UnaryServerInterceptor(opts...))})
	}
	public := &wire.Policy{Trust: wire.SourcesNone, Max: 5 * time.Second}
	withMax := edge(public, true)
	noDeadline := edge(&wire.Policy{Trust: wire.SourcesNone}, true)
	plain := edge(public, false)
	for _, tc := range []struct {
		name       string
		c          grpc_testing.TestServiceClient
		tier, sent string
		want       string
	}{
		{"classified critical", withMax, "critical", "", "critical critical deadline"},
		{"classified sheddable, client says critical", withMax, "sheddable", "critical", "sheddable sheddable deadline"},
		{"classified default", withMax, "", "critical", "default  deadline"},
		{"no deadline", noDeadline, "Critical", "sheddable", "critical critical"},
		{"untrusted, no classifier", plain, "critical", "critical", "default  deadline"},
	} {
		md := metadata.Pairs("x-tier", tc.tier)
		if tc.sent != "" {
			md.Set("request-criticality", tc.sent)
		}
		// No deadline from the client: grpc-go would impose one on the
		// edge's handler whatever the edge's policy trusts.
		ctx := metadata.NewOutgoingContext(context.Background(), md)
		_, err := tc.c.EmptyCall(ctx, &grpc_testing.Empty{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := <-last.seen; got != tc.want {
			t.Errorf("%s: the second hop saw %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Behind an edge, the server interceptor trusts the metadata; a hostile value
// is ignored under a lenient policy.
func TestCriticalityGRPCMetadataTrusted(t *testing.T) {
	t.Parallel()
	last := &hop{seen: make(chan string, 1)}
	c := start(t, last, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpcbudget.UnaryServerInterceptor())})
	for value, want := range map[string]string{
		"SHEDDABLE":         "sheddable SHEDDABLE",
		"urgent":            "default urgent",
		"critical, urgent":  "critical critical, urgent",
		"sheddable-as-well": "default sheddable-as-well",
	} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "request-criticality", value)
		if _, err := c.EmptyCall(ctx, &grpc_testing.Empty{}); err != nil {
			t.Fatal(err)
		}
		if got := <-last.seen; got != want {
			t.Errorf("%q: saw %q, want %q", value, got, want)
		}
	}
}

// The class a call is handled under is the first of: trusted
// request-criticality metadata, the classifier, a class other than the
// default already on the call's context (put there by a stats handler
// running the baggage propagator, say), the policy's Criticality.
func TestCriticalityContextPrecedence(t *testing.T) {
	t.Parallel()
	sheddablePolicy := &wire.Policy{Criticality: wire.CriticalitySheddable}
	classify := grpcbudget.WithClassifier(func(context.Context, string) budget.Criticality { return budget.DefaultCriticality })
	for _, tc := range []struct {
		name   string
		opts   []edge.ServerOption
		md     metadata.MD
		parent budget.Criticality
		want   budget.Criticality
	}{
		{"metadata beats the context", []edge.ServerOption{edge.WithPolicy(sheddablePolicy)},
			metadata.Pairs("request-criticality", "default"), budget.Critical, budget.DefaultCriticality},
		{"the classifier beats the context", []edge.ServerOption{edge.WithPolicy(sheddablePolicy), classify},
			nil, budget.Critical, budget.DefaultCriticality},
		{"the context beats the policy", []edge.ServerOption{edge.WithPolicy(sheddablePolicy)},
			nil, budget.Critical, budget.Critical},
		{"the context survives an edge's trust", []edge.ServerOption{edge.WithPolicy(&wire.Policy{Trust: wire.SourcesNone})},
			metadata.Pairs("request-criticality", "sheddable"), budget.Critical, budget.Critical},
		{"the policy without a class on the context", []edge.ServerOption{edge.WithPolicy(sheddablePolicy)},
			nil, budget.DefaultCriticality, budget.Sheddable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := metadata.NewIncomingContext(context.Background(), tc.md)
			if tc.parent != budget.DefaultCriticality {
				ctx = budget.WithCriticality(ctx, tc.parent)
			}
			var got budget.Criticality
			_, err := grpcbudget.UnaryServerInterceptor(tc.opts...)(ctx, nil, &grpc.UnaryServerInfo{FullMethod: "/s/M"},
				func(ctx context.Context, _ any) (any, error) {
					got = budget.CriticalityFrom(ctx)
					return nil, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("class %v, want %v", got, tc.want)
			}
		})
	}
}
