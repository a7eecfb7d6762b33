package connectbudget_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/wire"
)

// bidiProtocols are the protocols that run a full-duplex stream over h2c.
func eachBidi(t *testing.T, f func(t *testing.T, p protocol)) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			f(t, p)
		})
	}
}

// exchange sends bodies on a bidi stream one at a time, reading each answer,
// and returns the answers.
func exchange(t *testing.T, st *connect.BidiStreamForClient[str, str], bodies []string) []string {
	t.Helper()
	var got []string
	for _, b := range bodies {
		if err := st.Send(&str{Value: b}); err != nil {
			t.Fatalf("send %q: %v", b, err)
		}
		m, err := st.Receive()
		if err != nil {
			t.Fatalf("receive after %q: %v", b, err)
		}
		got = append(got, m.GetValue())
	}
	if err := st.CloseRequest(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Receive(); !errors.Is(err, io.EOF) {
		t.Fatalf("end of stream: %v, want io.EOF", err)
	}
	if err := st.CloseResponse(); err != nil {
		t.Fatal(err)
	}
	return got
}

func tenMessages() ([]string, []string) {
	bodies := make([]string, 10)
	want := make([]string, 10)
	for i := range bodies {
		bodies[i], want[i] = "hi", fmt.Sprintf("ok:%d", i+1)
	}
	bodies[2], want[2] = "hang", "timeout:3"
	return bodies, want
}

// The third message's handling hangs: it is given up at its per-message
// budget, and messages 4 to 10 are still answered, on a stream whose own
// deadline is far off.
func TestServerPerMessageBudget(t *testing.T) {
	t.Parallel()
	eachBidi(t, func(t *testing.T, p protocol) {
		svc := new(service)
		url, hc := serve(t, transports[1], svc, connect.WithInterceptors(
			connectbudget.NewServerInterceptor(connectbudget.WithMessageBudget(100*ms))))
		st := connect.NewClient[str, str](hc, url+bidiProc, p.opt).CallBidiStream(withTimeout(t, 30*time.Second))
		bodies, want := tenMessages()
		start := time.Now()
		got := exchange(t, st, bodies)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("answers %v, want %v", got, want)
		}
		if took := time.Since(start); took < 100*ms || took > 20*time.Second {
			t.Fatalf("the stream took %v: the hanging message was not bounded by its 100ms budget", took)
		}
	})
}

// A client asks for a per-message budget in Request-Message-Timeout-Ms; a
// server that trusts Request-Timeout-Ms honours it, one that trusts nobody
// does not.
func TestCallerMessageBudget(t *testing.T) {
	t.Parallel()
	for _, trusted := range []bool{true, false} {
		t.Run(fmt.Sprint("trusted=", trusted), func(t *testing.T) {
			t.Parallel()
			policy := &wire.Policy{}
			if !trusted {
				policy.Trust = wire.SourcesNone
			}
			svc := new(service)
			url, hc := serve(t, transports[1], svc, connect.WithInterceptors(
				connectbudget.NewServerInterceptor(edge.WithPolicy(policy))))
			ctx := withTimeout(t, 30*time.Second)
			st := connect.NewClient[str, str](hc, url+bidiProc, connect.WithInterceptors(
				connectbudget.NewClientInterceptor(connectbudget.WithMessageBudget(time.Second)))).CallBidiStream(ctx)
			if trusted {
				bodies, want := tenMessages()
				if got := exchange(t, st, bodies); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("answers %v, want %v", got, want)
				}
				return
			}
			// Untrusted: the server has no per-message budget, so the hanging
			// message holds the stream until the client's own per-message
			// budget ends it.
			if err := st.Send(&str{Value: "hang"}); err != nil {
				t.Fatal(err)
			}
			_, err := st.Receive()
			if connect.CodeOf(err) != connect.CodeDeadlineExceeded || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error %v, want DeadlineExceeded", err)
			}
			if !contains(err.Error(), "per-message budget") {
				t.Fatalf("error %q does not name the per-message budget", err)
			}
			_ = st.CloseRequest()
			_ = st.CloseResponse()
		})
	}
}

// ledgerEvents collects the events an observer sees.
type ledgerEvents struct {
	mu  sync.Mutex
	evs []budget.Event
}

func (l *ledgerEvents) Observe(_ context.Context, ev budget.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
}

func (l *ledgerEvents) idle() []budget.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []budget.Event
	for _, ev := range l.evs {
		if errors.Is(ev.Err, connectbudget.ErrIdle) {
			out = append(out, ev)
		}
	}
	return out
}

// A client that stops sending is detected at the server's idle timeout:
// the call ends DeadlineExceeded, and the ledger says the client went
// quiet.
func TestServerIdleTimeout(t *testing.T) {
	t.Parallel()
	eachBidi(t, func(t *testing.T, p protocol) {
		events := new(ledgerEvents)
		svc := new(service)
		url, hc := serve(t, transports[1], svc, connect.WithInterceptors(connectbudget.NewServerInterceptor(
			connectbudget.WithIdleTimeout(100*ms), edge.WithObserver(events), edge.WithStage("chat"))))
		st := connect.NewClient[str, str](hc, url+bidiProc, p.opt).CallBidiStream(withTimeout(t, 30*time.Second))
		if err := st.Send(&str{Value: "hi"}); err != nil {
			t.Fatal(err)
		}
		if m, err := st.Receive(); err != nil || m.GetValue() != "ok:1" {
			t.Fatalf("first answer %v, %v", m, err)
		}
		// Then send nothing: the server gives up at its idle timeout.
		_, err := st.Receive()
		if connect.CodeOf(err) != connect.CodeDeadlineExceeded || !contains(err.Error(), "client sent nothing") {
			t.Fatalf("error %v, want DeadlineExceeded saying the client went quiet", err)
		}
		_ = st.CloseRequest()
		_ = st.CloseResponse()
		evs := events.idle()
		if len(evs) != 1 || evs[0].Outcome != budget.OutcomeExpired || evs[0].Duration < 100*ms || !contains(evs[0].Err.Error(), "client") {
			t.Fatalf("idle events %+v, want one expired event of at least 100ms naming the client", evs)
		}
	})
}

// A server that stops sending is detected at the client's idle timeout:
// the stream ends with an error matching ErrIdle and DeadlineExceeded, and
// the caller's ledger says the server went quiet.
func TestClientIdleTimeout(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tr transport, p protocol) {
		svc := new(service)
		url, hc := serve(t, tr, svc)
		events := new(ledgerEvents)
		ctx, cancel := budget.Config{Observer: events}.Start(context.Background(), 30*time.Second)
		defer cancel()
		c := connect.NewClient[str, str](hc, url+serverProc, p.opt, connect.WithInterceptors(
			connectbudget.NewClientInterceptor(connectbudget.WithIdleTimeout(100*ms))))
		st, err := c.CallServerStream(ctx, connect.NewRequest(&str{Value: "hi"}))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if !st.Receive() || st.Msg().GetValue() != "first" {
			t.Fatalf("first message: %v", st.Err())
		}
		start := time.Now()
		if st.Receive() {
			t.Fatal("a second message from a server that sends one")
		}
		err = st.Err()
		if took := time.Since(start); took < 100*ms || took > 20*time.Second {
			t.Fatalf("idle detected after %v, want about 100ms", took)
		}
		if !errors.Is(err, connectbudget.ErrIdle) || !errors.Is(err, context.DeadlineExceeded) ||
			connect.CodeOf(err) != connect.CodeDeadlineExceeded || !contains(err.Error(), "server sent nothing") {
			t.Fatalf("error %v, want an idle DeadlineExceeded naming the server", err)
		}
		if evs := events.idle(); len(evs) != 1 {
			t.Fatalf("idle events %+v, want one", evs)
		}
	})
}

// MessageContext outside a stream with a per-message budget is a child of
// the context it is given, with no deadline of its own, that its cancel
// ends; as grpcbudget.MessageContext's is.
func TestMessageContextOutsideAStream(t *testing.T) {
	t.Parallel()
	ctx, cancelParent := context.WithCancel(context.Background())
	mctx, cancel := connectbudget.MessageContext(ctx)
	if _, ok := mctx.Deadline(); ok || mctx.Err() != nil {
		t.Fatal("MessageContext gave a plain context a deadline, or ended it")
	}
	cancel()
	if mctx.Err() == nil || ctx.Err() != nil {
		t.Fatal("cancel did not end the message's context alone")
	}
	mctx, cancel = connectbudget.MessageContext(ctx)
	defer cancel()
	cancelParent()
	if mctx.Err() == nil {
		t.Fatal("the message's context outlived its parent")
	}
}

// Over HTTP/1.1 a client stream's request body is the only way in: a
// client that sends one message and then nothing, without closing the
// body, is detected at the server's idle timeout and its handler ends
// there. net/http cannot interrupt a read of the body, so the answer
// (DeadlineExceeded, naming the client) leaves when the client sends more
// or closes the body, here at once after the idle event.
func TestServerIdleTimeoutHTTP1(t *testing.T) {
	t.Parallel()
	events := new(ledgerEvents)
	svc := new(service)
	url, hc := serve(t, transports[0], svc, connect.WithInterceptors(connectbudget.NewServerInterceptor(
		connectbudget.WithIdleTimeout(100*ms), edge.WithObserver(events))))
	body, w := io.Pipe()
	defer w.Close()
	req, err := http.NewRequestWithContext(withTimeout(t, 30*time.Second), http.MethodPost, url+clientProc, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/connect+proto")
	req.Header.Set("Connect-Protocol-Version", "1")
	msg, err := proto.Marshal(&str{Value: "one"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	go func() {
		// One enveloped message, then silence with the body left open until
		// the server's idle timeout has fired.
		_, _ = w.Write(append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg))), msg...))
		for len(events.idle()) == 0 && time.Since(start) < 20*time.Second {
			time.Sleep(5 * ms)
		}
		w.Close()
	}()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	evs := events.idle()
	if len(evs) != 1 || evs[0].Duration < 100*ms || !contains(evs[0].Err.Error(), "client") {
		t.Fatalf("idle events %+v, want one of at least 100ms naming the client", evs)
	}
	if !contains(string(out), "deadline_exceeded") || !contains(string(out), "client sent nothing") {
		t.Fatalf("answer %q, want a deadline_exceeded end of stream naming the client", out)
	}
}

// An op admits each message of a stream: it learns that a message takes
// 30 ms to handle, and then refuses, at once, the messages of a stream whose
// per-message budget is 10 ms, while a stream with time still has its
// messages handled.
func TestServerMessageAdmission(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "work", MinSamples: 3}
	svc := new(service)
	url, hc := serve(t, transports[1], svc, connect.WithInterceptors(connectbudget.NewServerInterceptor(
		connectbudget.WithMessageAdmission(edge.Ops{workProc: op}.Op))))
	talk := func(perMessage time.Duration, n int) []string {
		st := connect.NewClient[str, str](hc, url+workProc).CallBidiStream(withTimeout(t, 30*time.Second))
		if perMessage > 0 {
			// Asked for as a client with connectbudget asks, but without
			// its client-side bound, which a busy machine could trip.
			st.RequestHeader().Set(connectbudget.HeaderMessageTimeout, strconv.FormatInt(perMessage.Milliseconds(), 10))
		}
		bodies := make([]string, n)
		return exchange(t, st, bodies)
	}
	// Learn: every message has all the time it needs.
	for i, got := range talk(0, 5) {
		if got != "done" {
			t.Fatalf("learning, message %d: %q, want done", i+1, got)
		}
	}
	// 10 ms a message (the server gives it 9): each is refused before its
	// work starts, rather than cut off.
	for i, got := range talk(10*ms, 5) {
		if got != "refused" {
			t.Fatalf("10ms a message, message %d: %q, want refused", i+1, got)
		}
	}
	// A stream with time is still served.
	if got := talk(0, 2); got[0] != "done" || got[1] != "done" {
		t.Fatalf("after the refusals: %v, want done twice", got)
	}
}

// The per-message budget travels under one name over Connect and gRPC.
func TestHeaderMessageTimeoutIsWireName(t *testing.T) {
	t.Parallel()
	if connectbudget.HeaderMessageTimeout != wire.HeaderRequestMessageTimeout {
		t.Errorf("HeaderMessageTimeout = %q, want %q", connectbudget.HeaderMessageTimeout, wire.HeaderRequestMessageTimeout)
	}
}
