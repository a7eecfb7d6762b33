package connectbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/wire"
)

// The client sends the remaining budget in the protocol's header (which
// connect-go writes) and in Request-Timeout-Ms and Request-Deadline.
func TestClientSendsTheBudget(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tr transport, p protocol) {
		svc := new(service)
		url, hc := serve(t, tr, svc)
		c := unaryClient(hc, url, p.opt, connect.WithInterceptors(connectbudget.NewClientInterceptor()))
		before := time.Now()
		if _, err := unary(withTimeout(t, 3*time.Second), c, "hi"); err != nil {
			t.Fatal(err)
		}
		_, h := svc.last()
		rel, ok, err := wire.ParseRequestTimeout(h.Get("Request-Timeout-Ms"))
		if !ok || err != nil || rel > 3*time.Second || rel < time.Second {
			t.Fatalf("Request-Timeout-Ms %q: %v %v", h.Get("Request-Timeout-Ms"), ok, err)
		}
		abs, ok, err := wire.ParseRequestDeadline(h.Get("Request-Deadline"))
		if !ok || err != nil || abs.Before(before) || abs.After(before.Add(3*time.Second+time.Millisecond)) {
			t.Fatalf("Request-Deadline %q: %v %v", h.Get("Request-Deadline"), ok, err)
		}
		own := h.Get("Grpc-Timeout")
		if p.name == "connect" {
			own = h.Get("Connect-Timeout-Ms")
		}
		if own == "" {
			t.Fatalf("no protocol timeout header in %v", h)
		}
	})
}

// Calls without a deadline go out without budget headers.
func TestClientWithoutDeadlineSendsNothing(t *testing.T) {
	t.Parallel()
	svc := new(service)
	url, hc := serve(t, transports[1], svc)
	c := unaryClient(hc, url, connect.WithInterceptors(connectbudget.NewClientInterceptor()))
	if _, err := unary(context.Background(), c, "hi"); err != nil {
		t.Fatal(err)
	}
	if _, h := svc.last(); h.Get("Request-Timeout-Ms") != "" || h.Get("Connect-Timeout-Ms") != "" {
		t.Fatalf("budget headers sent without a deadline: %v", h)
	}
}

// A call with less than the minimum useful time left is refused without a
// network call, unary and streaming.
func TestClientRefusesLocally(t *testing.T) {
	t.Parallel()
	svc := new(service)
	url, hc := serve(t, transports[1], svc)
	ic := connect.WithInterceptors(connectbudget.NewClientInterceptor(edge.WithMinUseful(time.Second)))
	ctx := withTimeout(t, 300*ms)
	_, err := unary(ctx, unaryClient(hc, url, ic), "hi")
	if !errors.Is(err, budget.ErrInsufficient) || connect.CodeOf(err) != connect.CodeDeadlineExceeded {
		t.Fatalf("unary: error %v, want ErrInsufficient with DeadlineExceeded", err)
	}
	sc := connect.NewClient[str, str](hc, url+bidiProc, ic)
	st := sc.CallBidiStream(ctx)
	err = st.Send(&str{Value: "hi"})
	if !errors.Is(err, budget.ErrInsufficient) || connect.CodeOf(err) != connect.CodeDeadlineExceeded {
		t.Fatalf("stream: error %v, want ErrInsufficient with DeadlineExceeded", err)
	}
	_ = st.CloseRequest()
	_ = st.CloseResponse()
	if n := svc.calls.Load(); n != 0 {
		t.Fatalf("%d calls reached the server", n)
	}
}

// The transit allowance is taken off the deadline the server is sent.
func TestClientTransit(t *testing.T) {
	t.Parallel()
	svc := new(service)
	url, hc := serve(t, transports[1], svc)
	c := unaryClient(hc, url, connect.WithInterceptors(connectbudget.NewClientInterceptor(edge.WithTransit(time.Second))))
	if _, err := unary(withTimeout(t, 3*time.Second), c, "hi"); err != nil {
		t.Fatal(err)
	}
	_, h := svc.last()
	for _, name := range []string{"Request-Timeout-Ms", "Connect-Timeout-Ms"} {
		v, err := strconv.Atoi(h.Get(name))
		if err != nil || v > 2000 || v < 500 {
			t.Fatalf("%s = %q, want at most 2000 (3 s less 1 s of transit)", name, h.Get(name))
		}
	}
}

func TestClientAdmission(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "pay", MinUseful: 2 * time.Second}
	svc := new(service)
	url, hc := serve(t, transports[1], svc)
	adm := edge.WithAdmission(edge.Ops{unaryProc: op, bidiProc: op}.Op)
	ic := connect.WithInterceptors(connectbudget.NewClientInterceptor(adm))
	_, err := unary(withTimeout(t, 500*ms), unaryClient(hc, url, ic), "hi")
	if !errors.Is(err, budget.ErrInsufficient) || connect.CodeOf(err) != connect.CodeDeadlineExceeded {
		t.Fatalf("unary: error %v, want a refusal", err)
	}
	st := connect.NewClient[str, str](hc, url+bidiProc, ic).CallBidiStream(withTimeout(t, 500*ms))
	if err := st.Send(&str{Value: "hi"}); !errors.Is(err, budget.ErrInsufficient) {
		t.Fatalf("stream: error %v, want a refusal", err)
	}
	_ = st.CloseRequest()
	_ = st.CloseResponse()
	if n := svc.calls.Load(); n != 0 {
		t.Fatalf("%d refused calls reached the server", n)
	}
}

// An expiry the server reports and one the client's own deadline causes
// both match context.DeadlineExceeded and keep their *connect.Error.
func TestClientExpiryMatchesDeadlineExceeded(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tr transport, p protocol) {
		svc := new(service)
		url, hc := serve(t, tr, svc)
		c := unaryClient(hc, url, p.opt, connect.WithInterceptors(connectbudget.NewClientInterceptor()))
		_, err := unary(withTimeout(t, 100*ms), c, "sleep")
		var ce *connect.Error
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ce) || ce.Code() != connect.CodeDeadlineExceeded {
			t.Fatalf("error %v, want DeadlineExceeded matching context.DeadlineExceeded", err)
		}
	})
}
