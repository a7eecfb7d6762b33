package connectbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/wire"
)

func TestServerAppliesThePolicy(t *testing.T) {
	cases := []struct {
		name      string
		policy    *wire.Policy
		timeout   time.Duration // the client's deadline; 0 sends none
		kv        []string      // extra request headers
		code      connect.Code  // 0: success
		remaining time.Duration // upper bound of the handler's time left; 0: no deadline
		msg       string        // in the error message when refused
	}{
		{"nothing sent, no default", &wire.Policy{}, 0, nil, 0, 0, ""},
		{"nothing sent, default", &wire.Policy{Default: 800 * ms}, 0, nil, 0, 800 * ms, ""},
		{"protocol timeout honoured", &wire.Policy{}, 2 * time.Second, nil, 0, 2 * time.Second, ""},
		{"header stricter than protocol timeout", &wire.Policy{}, 5 * time.Second, []string{"Request-Timeout-Ms", "300"}, 0, 300 * ms, ""},
		{"client asking more than max is clamped", &wire.Policy{Max: 200 * ms}, 10 * time.Second, nil, 0, 200 * ms, ""},
		{"reserve kept back", &wire.Policy{AnswerMargin: 500 * ms}, 2 * time.Second, nil, 0, 1500 * ms, ""},
		{"shed below min", &wire.Policy{Min: 5 * time.Second}, 2 * time.Second, nil, connect.CodeDeadlineExceeded, 0, "refused on arrival: too little time left"},
		{"shed by header below min", &wire.Policy{Min: 100 * ms}, 0, []string{"Request-Timeout-Ms", "50"}, connect.CodeDeadlineExceeded, 0, "refused on arrival"},
		{"expired on arrival", &wire.Policy{}, 0, []string{"Request-Timeout-Ms", "0"}, connect.CodeDeadlineExceeded, 0, "deadline passed"},
		{"edge trusts nobody", &wire.Policy{Trust: wire.SourcesNone, Default: time.Second}, 0, []string{"Request-Timeout-Ms", "5"}, 0, time.Second, ""},
		{"untrusted protocol timeout still bounds", &wire.Policy{Trust: wire.SourcesOurs, Default: 5 * time.Second}, 300 * ms, nil, 0, 300 * ms, ""},
		{"malformed, lenient", &wire.Policy{Default: time.Second}, 0, []string{"Request-Timeout-Ms", "-5"}, 0, time.Second, ""},
		{"malformed, strict", &wire.Policy{Strict: true}, 0, []string{"Request-Timeout-Ms", "-5"}, connect.CodeInvalidArgument, 0, "Request-Timeout-Ms"},
		{"enforcement off", nil, 0, []string{"Request-Timeout-Ms", "0"}, 0, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			each(t, func(t *testing.T, tr transport, p protocol) {
				svc := new(service)
				url, hc := serve(t, tr, svc, connect.WithInterceptors(
					connectbudget.NewServerInterceptor(edge.WithPolicy(tc.policy), edge.WithStage("checkout"))))
				c := unaryClient(hc, url, p.opt)
				req := connect.NewRequest(&str{Value: "hi"})
				for i := 0; i+1 < len(tc.kv); i += 2 {
					req.Header().Set(tc.kv[i], tc.kv[i+1])
				}
				_, err := c.CallUnary(withTimeout(t, tc.timeout), req)
				if code := connect.CodeOf(err); err != nil && code != tc.code || err == nil && tc.code != 0 {
					t.Fatalf("error %v, want code %v", err, tc.code)
				}
				ran := svc.calls.Load() == 1
				if ran != (tc.code == 0) {
					t.Fatalf("handler ran: %v, with error %v", ran, err)
				}
				if !ran {
					if !contains(err.Error(), tc.msg) {
						t.Fatalf("error %q does not say %q", err, tc.msg)
					}
					return
				}
				left, _ := svc.last()
				switch {
				case tc.remaining == 0 && left != -1:
					t.Fatalf("handler has a deadline (%v left), want none", left)
				case tc.remaining > 0 && left == -1:
					t.Fatalf("handler has no deadline, want one of at most %v", tc.remaining)
				case tc.remaining > 0 && (left > tc.remaining || tc.remaining >= time.Second && left < tc.remaining/3):
					// The lower bound only catches a deadline far off the
					// expected one; a busy machine may delay the handler.
					t.Fatalf("handler has %v left, want at most %v (and not far below)", left, tc.remaining)
				}
			})
		})
	}
}

// A handler that runs out of budget answers DeadlineExceeded, whether it
// returns the context's error or, too late, a reply; the client sees an
// error that matches context.DeadlineExceeded.
func TestServerExpiry(t *testing.T) {
	t.Parallel()
	for _, body := range []string{"sleep", "nil-after"} {
		t.Run(body, func(t *testing.T) {
			t.Parallel()
			each(t, func(t *testing.T, tr transport, p protocol) {
				svc := new(service)
				url, hc := serve(t, tr, svc, connect.WithInterceptors(
					connectbudget.NewServerInterceptor(edge.WithPolicy(&wire.Policy{Max: 50 * ms}))))
				c := unaryClient(hc, url, p.opt, connect.WithInterceptors(connectbudget.NewClientInterceptor()))
				_, err := unary(withTimeout(t, 10*time.Second), c, body)
				if connect.CodeOf(err) != connect.CodeDeadlineExceeded {
					t.Fatalf("error %v, want DeadlineExceeded", err)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("error %v does not match context.DeadlineExceeded", err)
				}
			})
		})
	}
}

func TestServerObserverSeesRefusals(t *testing.T) {
	t.Parallel()
	var refusals []budget.Event
	obs := budget.ObserverFunc(func(_ context.Context, ev budget.Event) {
		if ev.Kind == budget.EventRefuse {
			refusals = append(refusals, ev)
		}
	})
	svc := new(service)
	url, hc := serve(t, transports[1], svc, connect.WithInterceptors(connectbudget.NewServerInterceptor(
		edge.WithPolicy(&wire.Policy{Min: time.Second}), edge.WithObserver(obs), edge.WithStage("pay"))))
	_, err := unary(withTimeout(t, 300*ms), unaryClient(hc, url), "hi")
	if connect.CodeOf(err) != connect.CodeDeadlineExceeded {
		t.Fatalf("error %v, want DeadlineExceeded", err)
	}
	if len(refusals) != 1 || refusals[0].Stage != "pay" || refusals[0].Outcome != budget.OutcomeShed {
		t.Fatalf("observer saw refusals %+v, want one shed refusal of stage pay", refusals)
	}
}

func TestServerSwitchChangesPolicyAtRunTime(t *testing.T) {
	t.Parallel()
	sw := new(wire.Switch)
	if err := sw.Store(&wire.Policy{Min: time.Second}); err != nil {
		t.Fatal(err)
	}
	svc := new(service)
	url, hc := serve(t, transports[1], svc, connect.WithInterceptors(connectbudget.NewServerInterceptor(edge.WithSwitch(sw))))
	c := unaryClient(hc, url)
	if _, err := unary(withTimeout(t, 300*ms), c, "hi"); connect.CodeOf(err) != connect.CodeDeadlineExceeded {
		t.Fatalf("under Min 1s: error %v, want DeadlineExceeded", err)
	}
	if err := sw.Store(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := unary(withTimeout(t, 300*ms), c, "hi"); err != nil {
		t.Fatalf("enforcement off: %v", err)
	}
}

func TestServerAdmissionRefusesBeforeTheHandler(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "pay", MinUseful: 2 * time.Second}
	svc := new(service)
	url, hc := serve(t, transports[1], svc, connect.WithInterceptors(connectbudget.NewServerInterceptor(
		edge.WithAdmission(edge.Ops{unaryProc: op}.Op))))
	_, err := unary(withTimeout(t, 500*ms), unaryClient(hc, url), "hi")
	if connect.CodeOf(err) != connect.CodeDeadlineExceeded || svc.calls.Load() != 0 {
		t.Fatalf("error %v after %d handler runs, want DeadlineExceeded and none", err, svc.calls.Load())
	}
	if _, err := unary(withTimeout(t, 5*time.Second), unaryClient(hc, url), "hi"); err != nil || svc.calls.Load() != 1 {
		t.Fatalf("a call with time: error %v, %d handler runs", err, svc.calls.Load())
	}
}

func TestWithPolicyPanicsOnInvalidPolicy(t *testing.T) {
	t.Parallel()
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, budget.ErrMisconfigured) || !errors.Is(err, wire.ErrInvalidPolicy) {
			t.Fatalf("recovered %v, want an error matching ErrMisconfigured and ErrInvalidPolicy", err)
		}
	}()
	connectbudget.NewServerInterceptor(edge.WithPolicy(&wire.Policy{Max: -time.Second}))
}

func TestZeroAndNilOptions(t *testing.T) {
	t.Parallel()
	svc := new(service)
	url, hc := serve(t, transports[1], svc, connect.WithInterceptors(connectbudget.NewServerInterceptor(nil, edge.WithSwitch(nil), connectbudget.WithClassifier(nil))))
	c := unaryClient(hc, url, connect.WithInterceptors(connectbudget.NewClientInterceptor(nil)))
	if got, err := unary(context.Background(), c, "hi"); err != nil || got != "ok" {
		t.Fatalf("got %q, %v", got, err)
	}
	if left, _ := svc.last(); left != -1 {
		t.Fatalf("a call without deadline got one: %v left", left)
	}
}
