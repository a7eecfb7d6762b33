package grpcbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

const ms = time.Millisecond

// call makes a plain grpc-go call (no client interceptor) with an optional
// grpc-timeout and metadata pairs.
func call(t *testing.T, c interface{}, timeout time.Duration, body string, kv ...string) error {
	t.Helper()
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if len(kv) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, kv...)
	}
	return do(ctx, c.(testClient), body)
}

func TestServerAppliesThePolicy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		policy    *wire.Policy
		timeout   time.Duration // the client's grpc-timeout; 0 sends none
		kv        []string
		code      codes.Code
		deadline  bool
		remaining time.Duration // upper bound when deadline is set
		msg       string        // in the status message when refused
	}{
		{"nothing sent, no default", &wire.Policy{}, 0, nil, codes.OK, false, 0, ""},
		{"nothing sent, default", &wire.Policy{Default: 800 * ms}, 0, nil, codes.OK, true, 800 * ms, ""},
		{"grpc-timeout honoured", &wire.Policy{}, 500 * ms, nil, codes.OK, true, 500 * ms, ""},
		{"metadata stricter than grpc-timeout", &wire.Policy{}, 2 * time.Second, []string{"request-timeout-ms", "300"}, codes.OK, true, 300 * ms, ""},
		{"grpc-timeout stricter than metadata", &wire.Policy{}, 300 * ms, []string{"request-timeout-ms", "2000", "connect-timeout-ms", "900"}, codes.OK, true, 300 * ms, ""},
		{"clamped to max", &wire.Policy{Max: 200 * ms}, 10 * time.Second, nil, codes.OK, true, 200 * ms, ""},
		{"reserve kept back", &wire.Policy{AnswerMargin: 100 * ms}, 500 * ms, nil, codes.OK, true, 400 * ms, ""},
		{"shed below min", &wire.Policy{Min: 100 * ms}, 50 * ms, nil, codes.DeadlineExceeded, false, 0, "refused on arrival: too little time left"},
		{"shed by metadata below min", &wire.Policy{Min: 100 * ms}, 0, []string{"request-timeout-ms", "50"}, codes.DeadlineExceeded, false, 0, "refused on arrival"},
		{"expired on arrival", &wire.Policy{}, 0, []string{"request-timeout-ms", "0"}, codes.DeadlineExceeded, false, 0, "deadline passed"},
		{"edge trusts nobody", &wire.Policy{Trust: wire.SourcesNone, Default: time.Second}, 0, []string{"request-timeout-ms", "5"}, codes.OK, true, time.Second, ""},
		{"untrusted grpc-timeout still bounds", &wire.Policy{Trust: wire.SourcesOurs, Default: time.Second}, 300 * ms, nil, codes.OK, true, 300 * ms, ""},
		{"malformed, lenient", &wire.Policy{Default: time.Second}, 0, []string{"request-timeout-ms", "-5"}, codes.OK, true, time.Second, ""},
		{"malformed, strict", &wire.Policy{Strict: true}, 0, []string{"request-timeout-ms", "-5"}, codes.InvalidArgument, false, 0, "Request-Timeout-Ms"},
		{"enforcement off", nil, 0, []string{"request-timeout-ms", "0"}, codes.OK, false, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := []edge.ServerOption{edge.WithPolicy(tc.policy), edge.WithStage("checkout")}
			c, svc := serve(t, withServer(grpcbudget.UnaryServerInterceptor(opts...), grpcbudget.StreamServerInterceptor(opts...)))
			// Connect first: on a busy machine, dialing can take longer
			// than the 50 ms some cases send, and the call would expire
			// on the client before it reached the policy.
			if _, err := c.EmptyCall(context.Background(), &grpc_testing.Empty{}); err != nil {
				t.Fatal(err)
			}
			err := call(t, c, tc.timeout, "", tc.kv...)
			st := status.Convert(err)
			if st.Code() != tc.code {
				t.Fatalf("code %v (%v), want %v", st.Code(), err, tc.code)
			}
			ran := svc.calls.Load() == 1
			if ran != (tc.code == codes.OK) {
				t.Fatalf("handler ran: %v, with code %v", ran, st.Code())
			}
			if !ran {
				if !strings.Contains(st.Message(), tc.msg) {
					t.Fatalf("message %q does not say %q", st.Message(), tc.msg)
				}
				return
			}
			s := svc.last()
			if s.deadline != tc.deadline {
				t.Fatalf("handler deadline: %v, want %v", s.deadline, tc.deadline)
			}
			if tc.deadline {
				if s.remaining > tc.remaining || s.remaining < tc.remaining-100*ms {
					t.Fatalf("handler saw %v left, want just under %v", s.remaining, tc.remaining)
				}
				if !s.ledger {
					t.Fatal("the handler's context carries no ledger")
				}
			}
		})
	}
}

func TestServerPolicySwapsAtRunTime(t *testing.T) {
	t.Parallel()
	var sw wire.Switch
	sw.Store(&wire.Policy{Min: time.Second})
	c, svc := serve(t, withServer(grpcbudget.UnaryServerInterceptor(edge.WithSwitch(&sw)),
		grpcbudget.StreamServerInterceptor(edge.WithSwitch(&sw))))
	if err := call(t, c, 200*ms, ""); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("with Min 1s: %v", err)
	}
	if err := stream(context.Background(), c, 1); err != nil { // no deadline: not shed
		t.Fatalf("stream without a deadline: %v", err)
	}
	sw.Store(nil) // the operator turns enforcement off
	if err := call(t, c, 0, "", "request-timeout-ms", "0"); err != nil || svc.last().deadline {
		t.Fatalf("with enforcement off: %v, deadline %v", err, svc.last().deadline)
	}
	sw.Store(&wire.Policy{Min: 10 * ms, Default: 300 * ms}) // looser, with a default
	if err := call(t, c, 200*ms, ""); err != nil {
		t.Fatalf("with Min 10ms: %v", err)
	}
	if err := call(t, c, 0, ""); err != nil || !svc.last().deadline {
		t.Fatalf("with a default: %v, deadline %v", err, svc.last().deadline)
	}
}

func TestServerStreams(t *testing.T) {
	t.Parallel()
	p := edge.WithPolicy(&wire.Policy{Min: 100 * ms, AnswerMargin: 20 * ms})
	c, svc := serve(t, withServer(grpcbudget.UnaryServerInterceptor(p), grpcbudget.StreamServerInterceptor(p)))

	ctx, cancel := context.WithTimeout(context.Background(), 50*ms)
	defer cancel()
	if err := stream(ctx, c, 3); status.Code(err) != codes.DeadlineExceeded || svc.calls.Load() != 0 {
		t.Fatalf("shed stream: %v, handler ran %d times", err, svc.calls.Load())
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := stream(ctx, c, 3); err != nil {
		t.Fatal(err)
	}
	s := svc.last()
	if !s.deadline || !s.ledger || s.remaining > 980*ms || s.remaining < 800*ms {
		t.Fatalf("stream handler saw %+v, want the budget less the reserve", s)
	}
}

func TestServerAdmissionRefusesBeforeTheHandler(t *testing.T) {
	t.Parallel()
	slow := &budget.Op{Name: "report", Prior: 500 * ms}
	ops := edge.WithAdmission(edge.Ops{
		"/grpc.testing.TestService/UnaryCall":           slow,
		"/grpc.testing.TestService/StreamingOutputCall": slow,
	}.Op)
	c, svc := serve(t, withServer(grpcbudget.UnaryServerInterceptor(ops), grpcbudget.StreamServerInterceptor(ops)))

	err := call(t, c, 100*ms, "")
	if st := status.Convert(err); st.Code() != codes.DeadlineExceeded || !strings.Contains(st.Message(), "report not started") {
		t.Fatalf("unary: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*ms)
	defer cancel()
	if err := stream(ctx, c, 1); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("stream: %v", err)
	}
	if n := svc.calls.Load(); n != 0 {
		t.Fatalf("the handler ran %d times", n)
	}
	if err := call(t, c, 2*time.Second, ""); err != nil || svc.calls.Load() != 1 {
		t.Fatalf("a call with time enough: %v", err)
	}
	if n := slow.Estimator.Distribution(time.Now().Add(50 * ms)); n.Count() != 1 {
		t.Fatalf("the op recorded %d samples, want the handler's one", n.Count())
	}
}

func TestServerCancelledAfterDeadlineIsDeadlineExceeded(t *testing.T) {
	t.Parallel()
	p := edge.WithPolicy(&wire.Policy{Default: 50 * ms})
	c, _ := serve(t, withServer(grpcbudget.UnaryServerInterceptor(p), grpcbudget.StreamServerInterceptor(p)))
	// The client sends no deadline, so only the server's budget can end the
	// call; the handler reports the end as CANCELLED.
	if err := call(t, c, 0, "cancel"); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("CANCELLED after the deadline: %v, want DEADLINE_EXCEEDED", err)
	}
	if err := call(t, c, 0, "cancel-now"); status.Code(err) != codes.Canceled {
		t.Fatalf("CANCELLED before the deadline: %v, want it kept", err)
	}
	if err := call(t, c, 0, "hang"); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("hang: %v", err)
	}
}

func TestServerObserver(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var kinds []string
	obs := budget.ObserverFunc(func(_ context.Context, ev budget.Event) {
		mu.Lock()
		k := ev.Kind.String() + ":" + ev.Outcome.String()
		if ev.Kind == budget.EventMalformed && ev.Err != nil {
			k += ":" + ev.Err.Error()
		}
		kinds = append(kinds, k)
		mu.Unlock()
	})
	opts := []edge.ServerOption{edge.WithObserver(obs), edge.WithPolicy(&wire.Policy{Min: 50 * ms})}
	c, _ := serve(t, withServer(grpcbudget.UnaryServerInterceptor(opts...), grpcbudget.StreamServerInterceptor(opts...)))
	_ = call(t, c, time.Second, "")
	_ = call(t, c, 45*ms, "")                                                                     // shed: under Min, and time to arrive on a busy machine
	_ = call(t, c, time.Second, "", "request-timeout-ms", "abc", "x-request-deadline", "1000000") // malformed + skew
	mu.Lock()
	defer mu.Unlock()
	got := strings.Join(kinds, " ")
	for _, want := range []string{"arrival:", "refuse:shed", "malformed:none:grpcbudget: malformed deadline header ignored: Request-Timeout-Ms", "skew:"} {
		if !strings.Contains(got, want) {
			t.Errorf("observer saw %q, missing %q", got, want)
		}
	}
}

func TestServerHandlerErrorsGetCodes(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "inner"}
	handlerErr := map[string]error{
		"insufficient": &budget.Error{Stage: "inner", Outcome: budget.OutcomeInsufficient},
		"expired":      &budget.Error{Stage: "inner", Outcome: budget.OutcomeExpired, Err: context.DeadlineExceeded},
		"plain":        errors.New("boom"),
	}
	want := map[string]codes.Code{"insufficient": codes.DeadlineExceeded, "expired": codes.DeadlineExceeded, "plain": codes.Unknown}
	for name, herr := range handlerErr {
		u := grpcbudget.UnaryServerInterceptor()
		_, err := u(context.Background(), nil, &grpcUnaryInfo, func(ctx context.Context, req any) (any, error) {
			return nil, op.Do(ctx, func(context.Context) error { return herr })
		})
		if got := status.Code(err); got != want[name] {
			t.Errorf("%s: code %v, want %v", name, got, want[name])
		}
		if !errors.Is(err, herr) {
			t.Errorf("%s: the handler's error is not reachable: %v", name, err)
		}
	}
}

func TestNilOptionsAreIgnored(t *testing.T) {
	t.Parallel()
	if grpcbudget.UnaryServerInterceptor(nil) == nil || grpcbudget.StreamServerInterceptor(nil) == nil ||
		grpcbudget.UnaryClientInterceptor(nil) == nil || grpcbudget.StreamClientInterceptor(nil) == nil {
		t.Fatal("an interceptor built with a nil option is missing")
	}
}
