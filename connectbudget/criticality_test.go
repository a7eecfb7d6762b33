package connectbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/wire"
)

// serveH2C serves h over HTTP/1.1 and HTTP/2 without TLS and returns its
// URL and a client speaking HTTP/2, which every protocol runs over.
func serveH2C(t *testing.T, h http.Handler) (string, *http.Client) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	hc := &http.Client{Transport: &http.Transport{Protocols: p}}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL, hc
}

// classHandler answers a unary call with the class its handler runs under,
// the Request-Criticality header it received and whether it has a deadline.
func classHandler(opts ...connect.HandlerOption) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(unaryProc, connect.NewUnaryHandler(unaryProc, func(ctx context.Context, r *connect.Request[str]) (*connect.Response[str], error) {
		s := budget.CriticalityFrom(ctx).String() + " " + r.Header().Get(wire.HeaderRequestCriticality)
		if _, ok := ctx.Deadline(); ok {
			s += " deadline"
		}
		return connect.NewResponse(&str{Value: s}), nil
	}, opts...))
	return mux
}

// A class given at a public edge crosses two Connect hops: server A ignores
// the class its client sends (it trusts nobody), classifies the call, and
// its client interceptor sends A's class on to server B, which trusts it and
// hands it to its handler, with or without a deadline, over the Connect,
// gRPC and gRPC-Web protocols.
func TestCriticalityAcrossTwoConnectHops(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			urlB, hcB := serveH2C(t, classHandler(connect.WithInterceptors(connectbudget.NewServerInterceptor())))
			toB := connect.NewClient[str, str](hcB, urlB+unaryProc, p.opt,
				connect.WithInterceptors(connectbudget.NewClientInterceptor()))
			for _, class := range []budget.Criticality{budget.Critical, budget.Sheddable, budget.DefaultCriticality} {
				// A: an edge that trusts no header and classifies every call.
				mux := http.NewServeMux()
				mux.Handle(unaryProc, connect.NewUnaryHandler(unaryProc, func(ctx context.Context, r *connect.Request[str]) (*connect.Response[str], error) {
					if got := budget.CriticalityFrom(ctx); got != class {
						return nil, connect.NewError(connect.CodeInternal, errors.New("A runs as "+got.String()))
					}
					return toB.CallUnary(ctx, connect.NewRequest(r.Msg))
				}, connect.WithInterceptors(connectbudget.NewServerInterceptor(
					edge.WithPolicy(&wire.Policy{Trust: wire.SourcesNone}),
					connectbudget.WithClassifier(func(_ context.Context, procedure string) budget.Criticality {
						if procedure != unaryProc {
							return budget.Sheddable
						}
						return class
					})))))
				urlA, hcA := serveH2C(t, mux)
				toA := connect.NewClient[str, str](hcA, urlA+unaryProc, p.opt)
				for _, timeout := range []time.Duration{0, 3 * time.Second} {
					req := connect.NewRequest(&str{Value: "hi"})
					req.Header().Set(wire.HeaderRequestCriticality, "critical") // a client's claim; A ignores it
					resp, err := toA.CallUnary(withTimeout(t, timeout), req)
					if err != nil {
						t.Fatalf("%v, timeout %v: %v", class, timeout, err)
					}
					want := class.String() + " "
					if class != budget.DefaultCriticality {
						want += class.String() // the default class is not sent
					}
					if timeout > 0 {
						want += " deadline"
					}
					if got := resp.Msg.GetValue(); got != want {
						t.Errorf("%v, timeout %v: B saw %q, want %q", class, timeout, got, want)
					}
				}
			}
		})
	}
}

// A server whose policy trusts no header ignores Request-Criticality, as it
// ignores the deadline headers; one that trusts it refuses or ignores a
// malformed value as the policy says.
func TestCriticalityTrust(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		policy *wire.Policy
		value  string
		code   connect.Code
		want   string // B's class
	}{
		{"trusted", &wire.Policy{}, "Sheddable", 0, "sheddable"},
		{"an edge ignores it", &wire.Policy{Trust: wire.SourcesNone}, "sheddable", 0, "default"},
		{"an edge ignores it, policy class", &wire.Policy{Trust: wire.SourcesNone, Criticality: wire.CriticalityCritical}, "sheddable", 0, "critical"},
		{"trust without the class", &wire.Policy{Trust: wire.SourcesOurs &^ wire.SourceRequestCriticality}, "sheddable", 0, "default"},
		{"malformed, lenient", &wire.Policy{}, "urgent", 0, "default"},
		{"malformed, strict", &wire.Policy{Strict: true}, "urgent", connect.CodeInvalidArgument, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, p := range protocols {
				url, hc := serveH2C(t, classHandler(connect.WithInterceptors(
					connectbudget.NewServerInterceptor(edge.WithPolicy(tc.policy)))))
				req := connect.NewRequest(&str{Value: "hi"})
				req.Header().Set(wire.HeaderRequestCriticality, tc.value)
				resp, err := connect.NewClient[str, str](hc, url+unaryProc, p.opt).CallUnary(context.Background(), req)
				if tc.code != 0 {
					if connect.CodeOf(err) != tc.code {
						t.Errorf("%s: error %v, want %v", p.name, err, tc.code)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", p.name, err)
				}
				if got := resp.Msg.GetValue(); len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
					t.Errorf("%s: handler saw %q, want class %s", p.name, got, tc.want)
				}
			}
		})
	}
}

// The client interceptor sends a context's class other than the default,
// and nothing for the default class.
func TestClientSendsTheClass(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tr transport, p protocol) {
		svc := new(service)
		url, hc := serve(t, tr, svc)
		c := unaryClient(hc, url, p.opt, connect.WithInterceptors(connectbudget.NewClientInterceptor()))
		for class, want := range map[budget.Criticality]string{budget.Critical: "critical", budget.Sheddable: "sheddable", budget.DefaultCriticality: ""} {
			if _, err := unary(budget.WithCriticality(context.Background(), class), c, "hi"); err != nil {
				t.Fatal(err)
			}
			if _, h := svc.last(); h.Get(wire.HeaderRequestCriticality) != want || len(h.Values(wire.HeaderRequestCriticality)) > 1 {
				t.Errorf("%v: sent %q, want %q", class, h.Values(wire.HeaderRequestCriticality), want)
			}
		}
	})
}

// Admission sheds by class: with half of the op's Limit in flight, a
// sheddable call is refused before its handler runs while a critical one is
// admitted; per-message admission on a stream does the same for each
// message of a sheddable stream.
func TestAdmissionShedsByClass(t *testing.T) {
	t.Parallel()
	t.Run("unary", func(t *testing.T) {
		t.Parallel()
		op := &budget.Op{Name: "pay", Limit: 4}
		for range 2 { // half of Limit in flight
			if a := op.BeginAt(time.Now(), budget.Ask{Available: time.Second, Criticality: budget.Critical}); !a.Admit {
				t.Fatal("the op refused a critical attempt with nothing in flight")
			}
		}
		for _, p := range protocols {
			svc := new(service)
			url, hc := serve(t, transports[1], svc, connect.WithInterceptors(connectbudget.NewServerInterceptor(
				edge.WithAdmission(edge.Ops{unaryProc: op}.Op))))
			c := unaryClient(hc, url, p.opt, connect.WithInterceptors(connectbudget.NewClientInterceptor()))
			ctx := withTimeout(t, 5*time.Second)
			_, err := unary(budget.WithCriticality(ctx, budget.Sheddable), c, "hi")
			if connect.CodeOf(err) != connect.CodeDeadlineExceeded || svc.calls.Load() != 0 {
				t.Errorf("%s: sheddable call: error %v after %d handler runs, want DeadlineExceeded and none", p.name, err, svc.calls.Load())
			}
			if _, err := unary(budget.WithCriticality(ctx, budget.Critical), c, "hi"); err != nil || svc.calls.Load() != 1 {
				t.Errorf("%s: critical call: error %v after %d handler runs, want it answered", p.name, err, svc.calls.Load())
			}
		}
	})
	t.Run("messages", func(t *testing.T) {
		t.Parallel()
		op := &budget.Op{Name: "work", Limit: 4}
		for range 2 {
			if a := op.BeginAt(time.Now(), budget.Ask{Available: time.Second, Criticality: budget.Critical}); !a.Admit {
				t.Fatal("the op refused a critical attempt with nothing in flight")
			}
		}
		eachBidi(t, func(t *testing.T, p protocol) {
			svc := new(service)
			url, hc := serve(t, transports[1], svc, connect.WithInterceptors(connectbudget.NewServerInterceptor(
				connectbudget.WithMessageAdmission(edge.Ops{workProc: op}.Op))))
			c := connect.NewClient[str, str](hc, url+workProc, p.opt, connect.WithInterceptors(connectbudget.NewClientInterceptor()))
			for class, want := range map[budget.Criticality]string{budget.Sheddable: "refused", budget.Critical: "done"} {
				ctx := budget.WithCriticality(withTimeout(t, 5*time.Second), class)
				st := c.CallBidiStream(ctx)
				got := exchange(t, st, []string{"a", "b"})
				if len(got) != 2 || got[0] != want || got[1] != want {
					t.Errorf("%v stream: answers %q, want %s for each", class, got, want)
				}
			}
		})
	})
}
