package grpcbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
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

// generous is the margin of every timed assertion here: far above what a
// loopback stream takes, so a busy machine cannot fail a test that holds.
const generous = time.Second

// TestStreamMessageHangs is the case: on a bidirectional stream the
// 3rd message's handling hangs; it ends at its per-message budget, and
// messages 4 to 10 are still answered, on the same stream.
func TestStreamMessageHangs(t *testing.T) {
	t.Parallel()
	const perMessage = 100 * time.Millisecond
	obs := &events{}
	c, svc := serveStreams(t, streamServer(grpcbudget.WithMessageBudget(perMessage),
		edge.WithPolicy(&wire.Policy{Max: time.Minute}), edge.WithObserver(obs)))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.FullDuplexCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 10; i++ {
		body := "m" + strconv.Itoa(i)
		if i == 3 {
			body = "hang"
		}
		if err := st.Send(duplexReq(body)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		resp, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d answers: %v", len(got), err)
		}
		got = append(got, string(resp.GetPayload().GetBody()))
	}
	want := []string{"m1", "m2", "expired:message", "m4", "m5", "m6", "m7", "m8", "m9", "m10"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("answers %q, want %q", got, want)
	}
	hangs := svc.hangs()
	if len(hangs) != 1 || hangs[0] < perMessage/2 || hangs[0] > perMessage+generous {
		t.Errorf("the hanging message's context lasted %v, want its budget %v", hangs, perMessage)
	}
	if evs := obs.stage(grpcbudget.MessageStage); len(evs) != 1 || evs[0].Outcome != budget.OutcomeExpired {
		t.Errorf("ledger entries of stage %q: %+v, want one expiry", grpcbudget.MessageStage, evs)
	}
}

// duplexAnswer sends one FullDuplexCall message with body on a new stream
// and returns the answer.
func duplexAnswer(t *testing.T, c grpc_testing.TestServiceClient, body string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.FullDuplexCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(duplexReq(body)); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	_ = st.CloseSend()
	for {
		if _, err := st.Recv(); err != nil {
			break
		}
	}
	return string(resp.GetPayload().GetBody())
}

// TestStreamMessageBudgetSent: the client's per-message budget travels in
// metadata and counts under the server's trust rule: the smaller of the
// client's and the server's wins, Max clamps it, and a server that trusts
// nothing ignores it.
func TestStreamMessageBudgetSent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		server []edge.ServerOption
		client time.Duration
		want   time.Duration // 0: no budget of its own: the stream's 30 s
	}{
		{"client only, a tenth kept back", nil, 300 * time.Millisecond, 270 * time.Millisecond},
		{"server smaller", []edge.ServerOption{grpcbudget.WithMessageBudget(200 * time.Millisecond)}, 20 * time.Second, 200 * time.Millisecond},
		{"client smaller", []edge.ServerOption{grpcbudget.WithMessageBudget(20 * time.Second)}, 300 * time.Millisecond, 270 * time.Millisecond},
		{"clamped by Max", []edge.ServerOption{edge.WithPolicy(&wire.Policy{Max: 400 * time.Millisecond})}, 20 * time.Second, 400 * time.Millisecond},
		{"untrusted", []edge.ServerOption{edge.WithPolicy(&wire.Policy{Trust: wire.SourcesNone})}, 300 * time.Millisecond, 0},
		{"enforcement off", []edge.ServerOption{edge.WithPolicy(nil)}, 300 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _ := serveStreams(t, streamServer(tc.server...),
				grpc.WithChainStreamInterceptor(grpcbudget.StreamClientInterceptor(grpcbudget.WithMessageBudget(tc.client))))
			got := duplexAnswer(t, c, "deadline")
			ms, err := strconv.Atoi(got)
			if err != nil {
				t.Fatalf("answer %q", got)
			}
			if tc.want == 0 {
				if ms < 10_000 {
					t.Fatalf("message had %s ms, want the stream's deadline", got)
				}
				return
			}
			if left := time.Duration(ms) * time.Millisecond; left > tc.want || left < tc.want-generous/2 {
				t.Fatalf("message had %v left, want about %v", left, tc.want)
			}
		})
	}
}

// TestStreamMessageBudgetMalformed: a malformed per-message budget is
// refused with INVALID_ARGUMENT naming the key under a strict policy, and
// ignored otherwise.
func TestStreamMessageBudgetMalformed(t *testing.T) {
	t.Parallel()
	for _, strict := range []bool{true, false} {
		obs := &events{}
		c, _ := serveStreams(t, streamServer(edge.WithPolicy(&wire.Policy{Strict: strict}), edge.WithObserver(obs)))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ctx = metadata.AppendToOutgoingContext(ctx, grpcbudget.MessageTimeoutKey, "-5")
		st, err := c.FullDuplexCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = st.Send(duplexReq("deadline"))
		resp, err := st.Recv()
		cancel()
		if strict {
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), wire.HeaderRequestMessageTimeout) {
				t.Errorf("strict: %v, want INVALID_ARGUMENT naming %s", err, wire.HeaderRequestMessageTimeout)
			}
			continue
		}
		if ms, _ := strconv.Atoi(string(resp.GetPayload().GetBody())); err != nil || ms < 10_000 {
			t.Errorf("lenient: %v %q, want the message handled under the stream's deadline", err, resp.GetPayload().GetBody())
		}
		if len(obs.stage(grpcbudget.MessageTimeoutKey)) != 1 {
			t.Errorf("lenient: malformed value not reported")
		}
	}
}

// TestStreamClientIdle: a client that stops sending is detected at the
// server's idle timeout; the stream ends with DEADLINE_EXCEEDED saying
// "client idle", and a ledger entry says the client went quiet.
func TestStreamClientIdle(t *testing.T) {
	t.Parallel()
	const idle = 50 * time.Millisecond
	obs := &events{}
	c, _ := serveStreams(t, streamServer(grpcbudget.WithIdleTimeout(idle), edge.WithObserver(obs),
		edge.WithPolicy(&wire.Policy{Default: time.Minute})))
	const streams = 20
	lags := idleLags(t, c, streams, idle)
	for i, lag := range lags {
		if lag < -time.Millisecond || lag > generous {
			t.Errorf("stream %d: detected %v after the idle timeout, want within %v", i, lag, generous)
		}
	}
	evs := obs.stage("client idle")
	if len(evs) != streams {
		t.Fatalf("%d ledger entries of stage %q, want %d", len(evs), "client idle", streams)
	}
	for _, ev := range evs {
		if ev.Outcome != budget.OutcomeExpired || ev.Duration < idle || !errors.Is(ev.Err, grpcbudget.ErrIdle) {
			t.Errorf("entry %+v, want an expiry of at least %v matching ErrIdle", ev, idle)
		}
	}
}

// idleLags opens n client streams at once, each sending two messages and
// then nothing, and returns, for each, how long after the idle timeout
// (counted from its last message) the client learned that the stream ended.
// Each stream must end with DEADLINE_EXCEEDED saying "client idle".
func idleLags(t testing.TB, c grpc_testing.TestServiceClient, n int, idle time.Duration) []time.Duration {
	lags := make([]time.Duration, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := c.StreamingInputCall(ctx)
			if err != nil {
				errs <- err
				return
			}
			for range 2 {
				if err := st.Send(&grpc_testing.StreamingInputCallRequest{}); err != nil {
					errs <- err
					return
				}
			}
			last := time.Now()
			err = st.RecvMsg(new(grpc_testing.StreamingInputCallResponse))
			lags[i] = time.Since(last) - idle
			if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(status.Convert(err).Message(), "client idle") {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("want DEADLINE_EXCEEDED saying client idle, got %v", err)
	}
	return lags
}

// TestStreamServerIdle: on the client, a RecvMsg that waits longer than the
// idle timeout ends the stream with DEADLINE_EXCEEDED saying "server idle",
// matching ErrIdle and context.DeadlineExceeded, with a ledger entry in the
// caller's budget.
func TestStreamServerIdle(t *testing.T) {
	t.Parallel()
	const idle = 50 * time.Millisecond
	c, _ := serveStreams(t, nil, grpc.WithChainStreamInterceptor(grpcbudget.StreamClientInterceptor(grpcbudget.WithIdleTimeout(idle))))
	ctx, cancel := budget.Start(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.StreamingOutputCall(ctx, &grpc_testing.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = st.Recv()
	waited := time.Since(start)
	if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(status.Convert(err).Message(), "server idle") ||
		!errors.Is(err, grpcbudget.ErrIdle) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want DEADLINE_EXCEEDED saying server idle", err)
	}
	if waited < idle || waited > idle+generous {
		t.Errorf("waited %v, want about %v", waited, idle)
	}
	var found bool
	for _, ev := range budget.LedgerFrom(ctx).Events() {
		found = found || ev.Stage == "server idle" && ev.Outcome == budget.OutcomeExpired
	}
	if !found {
		t.Errorf("no ledger entry says the server went quiet:\n%s", budget.LedgerFrom(ctx))
	}
}

// TestStreamClientRecvBudget: on the client, a RecvMsg that waits longer
// than the per-message budget ends with DEADLINE_EXCEEDED matching
// ErrMessageBudget.
func TestStreamClientRecvBudget(t *testing.T) {
	t.Parallel()
	const perMessage = 50 * time.Millisecond
	c, _ := serveStreams(t, nil, grpc.WithChainStreamInterceptor(grpcbudget.StreamClientInterceptor(grpcbudget.WithMessageBudget(perMessage))))
	st, err := c.StreamingOutputCall(context.Background(), &grpc_testing.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = st.Recv()
	waited := time.Since(start)
	if status.Code(err) != codes.DeadlineExceeded || !errors.Is(err, grpcbudget.ErrMessageBudget) {
		t.Fatalf("err %v, want DEADLINE_EXCEEDED matching ErrMessageBudget", err)
	}
	if waited < perMessage || waited > perMessage+generous {
		t.Errorf("waited %v, want about %v", waited, perMessage)
	}
}

// TestStreamClientSendBudget: on the client, a SendMsg held by flow control
// longer than the per-message budget (the server stopped reading) ends the
// stream with DEADLINE_EXCEEDED matching ErrMessageBudget.
func TestStreamClientSendBudget(t *testing.T) {
	t.Parallel()
	const perMessage = 50 * time.Millisecond
	// Fixed 64 KiB windows: grpc-go otherwise grows them to megabytes.
	c, _ := serveStreams(t, []grpc.ServerOption{grpc.InitialWindowSize(1 << 16), grpc.InitialConnWindowSize(1 << 16)},
		grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<16),
		grpc.WithChainStreamInterceptor(grpcbudget.StreamClientInterceptor(grpcbudget.WithMessageBudget(perMessage))))
	st, err := c.FullDuplexCall(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(duplexReq("stall")); err != nil {
		t.Fatal(err)
	}
	big := duplexReq(strings.Repeat("x", 16<<10))
	var sendErr error
	var waited time.Duration
	for range 100 { // the windows fill after a few
		start := time.Now()
		if sendErr = st.Send(big); sendErr != nil {
			waited = time.Since(start)
			break
		}
	}
	if sendErr == io.EOF {
		_, sendErr = st.Recv() // SendMsg reports a failed stream as io.EOF
	}
	if status.Code(sendErr) != codes.DeadlineExceeded || !errors.Is(sendErr, grpcbudget.ErrMessageBudget) {
		t.Fatalf("err %v, want DEADLINE_EXCEEDED matching ErrMessageBudget", sendErr)
	}
	if waited > perMessage+generous {
		t.Errorf("a send waited %v, want about %v", waited, perMessage)
	}
}

// TestStreamMessageOp: with WithMessageOp, a message the op says cannot be
// handled in its time is not run as an attempt; the handler sees it with a
// context already done, whose cause is the refusal, and the stream goes on.
func TestStreamMessageOp(t *testing.T) {
	t.Parallel()
	op := &budget.Op{Name: "per-message", Prior: 10 * time.Second, ProbeEvery: -1}
	c, _ := serveStreams(t, streamServer(grpcbudget.WithMessageBudget(100*time.Millisecond), grpcbudget.WithMessageOp(op)))
	if got := duplexAnswer(t, c, "hang"); got != "expired:refused" {
		t.Fatalf("answer %q, want the refusal", got)
	}
}
