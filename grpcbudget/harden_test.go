package grpcbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

// TestServerMaxIsACeiling is the regression test for a Max that did not bound
// a call whose grpc-timeout the policy does not trust, or a call that sent no
// deadline: the handler ran with the client's hour, or with none.
func TestServerMaxIsACeiling(t *testing.T) {
	t.Parallel()
	const max = 200 * ms
	cases := []struct {
		name    string
		policy  wire.Policy
		timeout time.Duration // the client's grpc-timeout; 0 sends none
		kv      []string
	}{
		{"nothing sent", wire.Policy{Max: max}, 0, nil},
		{"an hour, trusted", wire.Policy{Max: max}, time.Hour, nil},
		{"an hour, untrusted", wire.Policy{Max: max, Trust: wire.SourcesNone}, time.Hour, nil},
		{"an hour, only ours trusted", wire.Policy{Max: max, Trust: wire.SourcesOurs}, time.Hour, nil},
		{"an hour in metadata", wire.Policy{Max: max}, 0, []string{"request-timeout-ms", "3600000"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := []edge.ServerOption{edge.WithPolicy(&tc.policy)}
			c, svc := serve(t, withServer(grpcbudget.UnaryServerInterceptor(opts...), grpcbudget.StreamServerInterceptor(opts...)))
			if err := call(t, c, tc.timeout, "", tc.kv...); err != nil {
				t.Fatalf("call: %v", err)
			}
			if s := svc.last(); !s.deadline || s.remaining > max {
				t.Fatalf("handler saw deadline %v, %v left; want at most Max (%v)", s.deadline, s.remaining, max)
			}
		})
	}
}

// TestServerInterceptorBoundsTheContextDeadline calls the interceptor as
// grpc-go does, with the client's grpc-timeout already on the context.
func TestServerInterceptorBoundsTheContextDeadline(t *testing.T) {
	t.Parallel()
	for _, trust := range []wire.Sources{0, wire.SourcesNone, wire.SourcesOurs} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("request-timeout-ms", "3600000"))
		u := grpcbudget.UnaryServerInterceptor(edge.WithPolicy(&wire.Policy{Max: time.Second, Trust: trust}))
		var left time.Duration
		_, err := u(ctx, nil, &grpcUnaryInfo, func(ctx context.Context, _ any) (any, error) {
			dl, _ := ctx.Deadline()
			left = time.Until(dl)
			return nil, nil
		})
		cancel()
		if err != nil || left > time.Second {
			t.Fatalf("trust %v: err %v, handler had %v; want at most 1s", trust, err, left)
		}
	}
}

func TestWithPolicyPanicsOnAnInvalidPolicy(t *testing.T) {
	t.Parallel()
	for name, build := range map[string]func(...edge.ServerOption){
		"unary":  func(o ...edge.ServerOption) { grpcbudget.UnaryServerInterceptor(o...) },
		"stream": func(o ...edge.ServerOption) { grpcbudget.StreamServerInterceptor(o...) },
	} {
		func() {
			defer func() {
				err, _ := recover().(error)
				if !errors.Is(err, budget.ErrMisconfigured) || !errors.Is(err, wire.ErrInvalidPolicy) ||
					!strings.Contains(err.Error(), "Policy.AnswerMargin") {
					t.Errorf("%s: panic value %v; want an error naming Policy.AnswerMargin", name, err)
				}
			}()
			build(edge.WithPolicy(&wire.Policy{AnswerMargin: -ms}))
			t.Errorf("%s: an invalid policy was accepted", name)
		}()
	}
}

// fakeStream is a client stream that answers RecvMsg from a script.
type fakeStream struct {
	grpc.ClientStream
	recv []error
}

func (f *fakeStream) RecvMsg(any) error {
	err := f.recv[0]
	f.recv = f.recv[1:]
	return err
}

// Trailer is empty: no server sent one.
func (f *fakeStream) Trailer() metadata.MD { return nil }

// TestClientStreamReleasesItsContext is the regression test for a client
// stream whose derived context (the transit deadline) was released only on a
// RecvMsg error: a client-streaming call that ended cleanly with CloseAndRecv
// kept its timer until the deadline.
func TestClientStreamReleasesItsContext(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		desc grpc.StreamDesc
		recv []error // what RecvMsg returns, in order
		live []bool  // whether the context is still live after each
	}{
		{"client streaming: the reply ends it", grpc.StreamDesc{ClientStreams: true}, []error{nil}, []bool{false}},
		{"server streaming: io.EOF ends it", grpc.StreamDesc{ServerStreams: true}, []error{nil, nil, io.EOF}, []bool{true, true, false}},
		{"bidirectional: an error ends it", grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, []error{nil, errors.New("boom")}, []bool{true, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			var sent context.Context
			streamer := func(ctx context.Context, _ *grpc.StreamDesc, _ *grpc.ClientConn, _ string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
				sent = ctx
				return &fakeStream{recv: tc.recv}, nil
			}
			s := grpcbudget.StreamClientInterceptor(edge.WithTransit(ms))
			cs, err := s(ctx, &tc.desc, nil, "/svc/M", streamer)
			if err != nil {
				t.Fatal(err)
			}
			for i, live := range tc.live {
				_ = cs.RecvMsg(nil)
				if (sent.Err() == nil) != live {
					t.Fatalf("after RecvMsg %d: context live %v, want %v", i+1, sent.Err() == nil, live)
				}
			}
		})
	}
}

func TestClientInterceptorWithoutInvoker(t *testing.T) {
	t.Parallel()
	u := grpcbudget.UnaryClientInterceptor()
	if err := u(context.Background(), "/svc/M", nil, nil, nil, nil); !errors.Is(err, budget.ErrMisconfigured) {
		t.Errorf("unary: %v; want ErrMisconfigured", err)
	}
	s := grpcbudget.StreamClientInterceptor()
	if _, err := s(context.Background(), &grpc.StreamDesc{}, nil, "/svc/M", nil); !errors.Is(err, budget.ErrMisconfigured) {
		t.Errorf("stream: %v; want ErrMisconfigured", err)
	}
}
