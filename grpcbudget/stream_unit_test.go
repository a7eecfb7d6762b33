package grpcbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

// fakeServerStream is a server stream with no network under it: RecvMsg
// hands out n messages, then blocks until release is closed (when it is not
// nil) or returns io.EOF.
type fakeServerStream struct {
	grpc.ServerStream
	ctx     context.Context
	n       int
	release chan struct{}
}

func (s *fakeServerStream) Context() context.Context { return s.ctx }
func (s *fakeServerStream) SendMsg(any) error        { return nil }
func (s *fakeServerStream) RecvMsg(any) error {
	if s.n > 0 {
		s.n--
		return nil
	}
	if s.release != nil {
		<-s.release
	}
	return io.EOF
}

var duplexInfo = &grpc.StreamServerInfo{FullMethod: grpc_testing.TestService_FullDuplexCall_FullMethodName,
	IsClientStream: true, IsServerStream: true}

// eachMessage is a handler that handles every message with handle.
func eachMessage(handle func(context.Context, *grpc_testing.StreamingOutputCallRequest) error) grpc.StreamHandler {
	return func(_ any, ss grpc.ServerStream) error {
		st := &grpc.GenericServerStream[grpc_testing.StreamingOutputCallRequest, grpc_testing.StreamingOutputCallResponse]{ServerStream: ss}
		return grpcbudget.EachMessage(st, handle)
	}
}

// TestMessageContextDeadline: on virtual time, each message's context ends
// exactly at its per-message budget from its arrival, with ErrMessageBudget
// as cause, or at the stream's deadline when that comes first, with the
// stream's cause.
func TestMessageContextDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		intercept := grpcbudget.StreamServerInterceptor(grpcbudget.WithMessageBudget(100 * time.Millisecond))
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		var lasted []time.Duration
		var causes []error
		err := intercept(struct{}{}, &fakeServerStream{ctx: ctx, n: 3}, duplexInfo, eachMessage(
			func(ctx context.Context, _ *grpc_testing.StreamingOutputCallRequest) error {
				start := time.Now()
				<-ctx.Done()
				lasted = append(lasted, time.Since(start))
				causes = append(causes, context.Cause(ctx))
				return nil
			}))
		if status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("stream ended with %v, want DEADLINE_EXCEEDED: its deadline passed", err)
		}
		// The stream's handler deadline is 250 ms less the answer margin
		// (1 ms plus the learned lateness, 0 on virtual time).
		want := []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 49 * time.Millisecond}
		if len(lasted) != 3 || lasted[0] != want[0] || lasted[1] != want[1] || lasted[2] != want[2] {
			t.Fatalf("messages lasted %v, want %v", lasted, want)
		}
		if causes[0] != grpcbudget.ErrMessageBudget || causes[2] == grpcbudget.ErrMessageBudget ||
			!errors.Is(causes[2], context.DeadlineExceeded) {
			t.Errorf("causes %v, want the message budget twice and then the stream's deadline", causes)
		}
	})
}

// TestServerIdleVirtual: on virtual time, a server stream whose client
// sends nothing ends exactly at the idle timeout, with DEADLINE_EXCEEDED
// saying "client idle" whatever the handler returns, and the handler's
// context canceled with the idle error as cause.
func TestServerIdleVirtual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = 50 * time.Millisecond
		intercept := grpcbudget.StreamServerInterceptor(grpcbudget.WithIdleTimeout(idle))
		ss := &fakeServerStream{ctx: context.Background(), n: 2, release: make(chan struct{})}
		defer close(ss.release) // lets the receiving goroutine end
		var waited time.Duration
		var handlerCause error
		err := intercept(struct{}{}, ss, duplexInfo, func(_ any, ss grpc.ServerStream) error {
			for {
				start := time.Now()
				if err := ss.RecvMsg(nil); err != nil {
					waited = time.Since(start)
					handlerCause = context.Cause(ss.Context())
					return nil // the handler hides the error; the stream still ends idle
				}
			}
		})
		if waited != idle {
			t.Errorf("RecvMsg waited %v, want exactly %v", waited, idle)
		}
		if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(status.Convert(err).Message(), "client idle") ||
			!errors.Is(err, grpcbudget.ErrIdle) {
			t.Errorf("stream ended with %v, want DEADLINE_EXCEEDED saying client idle", err)
		}
		if !errors.Is(handlerCause, grpcbudget.ErrIdle) {
			t.Errorf("handler's context cause %v, want the idle error", handlerCause)
		}
	})
}

// fakeClientStream is a client stream with no network under it: RecvMsg
// and SendMsg return at once, or, when block is set, wait for the stream's
// context and return its error.
type fakeClientStream struct {
	grpc.ClientStream
	ctx   context.Context
	block bool
}

func (s *fakeClientStream) wait() error {
	if s.block {
		<-s.ctx.Done()
		return status.FromContextError(s.ctx.Err()).Err()
	}
	return nil
}
func (s *fakeClientStream) RecvMsg(any) error            { return s.wait() }
func (s *fakeClientStream) SendMsg(any) error            { return s.wait() }
func (s *fakeClientStream) Header() (metadata.MD, error) { return nil, nil }
func (s *fakeClientStream) Context() context.Context     { return s.ctx }
func (s *fakeClientStream) CloseSend() error             { return nil }
func (s *fakeClientStream) Trailer() metadata.MD         { return nil }

var duplexDesc = &grpc.StreamDesc{StreamName: "FullDuplexCall", ServerStreams: true, ClientStreams: true}

// openFake opens a stream through the client interceptor over a fake.
func openFake(t *testing.T, ctx context.Context, block bool, opts ...edge.ClientOption) grpc.ClientStream {
	t.Helper()
	intercept := grpcbudget.StreamClientInterceptor(opts...)
	cs, err := intercept(ctx, duplexDesc, nil, "/svc/Duplex",
		func(ctx context.Context, _ *grpc.StreamDesc, _ *grpc.ClientConn, _ string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
			return &fakeClientStream{ctx: ctx, block: block}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestClientLimitsVirtual: on virtual time, a client RecvMsg that awaits
// an answer (here after CloseSend) or a SendMsg that blocks ends exactly at
// its limit: the idle timeout for RecvMsg when it is the smaller ("server
// idle"), the per-message budget otherwise.
func TestClientLimitsVirtual(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []edge.ClientOption
		send    bool
		want    time.Duration
		wantErr error
		stage   string
	}{
		{"recv idle", []edge.ClientOption{grpcbudget.WithIdleTimeout(30 * time.Millisecond), grpcbudget.WithMessageBudget(time.Second)}, false, 30 * time.Millisecond, grpcbudget.ErrIdle, "server idle"},
		{"recv budget", []edge.ClientOption{grpcbudget.WithIdleTimeout(time.Second), grpcbudget.WithMessageBudget(40 * time.Millisecond)}, false, 40 * time.Millisecond, grpcbudget.ErrMessageBudget, grpcbudget.MessageStage},
		{"send budget", []edge.ClientOption{grpcbudget.WithIdleTimeout(time.Millisecond), grpcbudget.WithMessageBudget(40 * time.Millisecond)}, true, 40 * time.Millisecond, grpcbudget.ErrMessageBudget, grpcbudget.MessageStage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := budget.Start(context.Background(), time.Hour)
				defer cancel()
				cs := openFake(t, ctx, true, tc.opts...)
				start := time.Now()
				var err error
				if tc.send {
					err = cs.SendMsg(nil)
				} else {
					_ = cs.CloseSend() // every answer is now awaited
					err = cs.RecvMsg(nil)
				}
				if waited := time.Since(start); waited != tc.want {
					t.Errorf("waited %v, want exactly %v", waited, tc.want)
				}
				if status.Code(err) != codes.DeadlineExceeded || !errors.Is(err, tc.wantErr) || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("err %v, want DEADLINE_EXCEEDED matching %v", err, tc.wantErr)
				}
				var found bool
				for _, ev := range budget.LedgerFrom(ctx).Events() {
					found = found || ev.Stage == tc.stage && ev.Duration == tc.want
				}
				if !found {
					t.Errorf("no ledger entry of stage %q lasting %v:\n%s", tc.stage, tc.want, budget.LedgerFrom(ctx))
				}
			})
		})
	}
}

// TestStreamAllocations pins what per-message budgets cost per message. On
// the server, beside the message Recv allocates, EachMessage's message
// context costs what the context package charges: three allocations for
// context.WithCancel and its done channel without a budget, five for
// context.WithDeadlineCause, its timer and its done channel with one. On
// the client nothing: the timers are made once per stream and reset.
func TestStreamAllocations(t *testing.T) {
	const msgs = 100
	server := func(opts ...edge.ServerOption) float64 {
		intercept := grpcbudget.StreamServerInterceptor(opts...)
		handler := eachMessage(func(ctx context.Context, _ *grpc_testing.StreamingOutputCallRequest) error {
			_ = ctx.Done()
			return nil
		})
		run := func(n int) float64 {
			return testing.AllocsPerRun(50, func() {
				_ = intercept(struct{}{}, &fakeServerStream{ctx: context.Background(), n: n}, duplexInfo, handler)
			})
		}
		return (run(msgs+1) - run(1)) / msgs
	}
	const (
		maxPlain  = 4 // measured 4
		maxBudget = 6 // measured 6
	)
	if got := server(); got > maxPlain {
		t.Errorf("server, no per-message budget: %.2f allocations per message, want at most %d", got, maxPlain)
	}
	if got := server(grpcbudget.WithMessageBudget(time.Second)); got > maxBudget {
		t.Errorf("server, per-message budget: %.2f allocations per message, want at most %d", got, maxBudget)
	}

	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	cs := openFake(t, ctx, false, grpcbudget.WithMessageBudget(time.Second), grpcbudget.WithIdleTimeout(time.Second))
	if got := testing.AllocsPerRun(500, func() {
		_ = cs.SendMsg(nil)
		_ = cs.RecvMsg(nil)
	}); got != 0 {
		t.Errorf("client: %v allocations per SendMsg and RecvMsg, want 0", got)
	}
}

// The per-message budget travels under one name over gRPC and Connect:
// wire.HeaderRequestMessageTimeout, in lower case as gRPC metadata spells it.
func TestMessageTimeoutKeyIsWireName(t *testing.T) {
	t.Parallel()
	if grpcbudget.MessageTimeoutKey != strings.ToLower(wire.HeaderRequestMessageTimeout) {
		t.Errorf("MessageTimeoutKey = %q, want %q in lower case", grpcbudget.MessageTimeoutKey, wire.HeaderRequestMessageTimeout)
	}
}
