package grpcbudget_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

// wantSent fails the test unless err is classified as want.
func wantSent(t *testing.T, what string, err error, want budget.Sent) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want one classified %v", what, want)
	}
	if got, ok := budget.SentOf(err); !ok || got != want {
		t.Errorf("%s: %v classified %v (%v), want %v", what, err, got, ok, want)
	}
}

// refusingClient returns a client with our interceptors for an address where
// nothing listens: every connection is refused.
func refusingClient(t *testing.T) testClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	conn, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())},
		withClient()...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return grpc_testing.NewTestServiceClient(conn)
}

// A connection refused before any transport stream existed is NotSent, for
// a unary call and for a stream; before the change it was unclassified.
func TestClientConnectionRefusedIsNotSent(t *testing.T) {
	t.Parallel()
	c := refusingClient(t)
	ctx, cancel := budget.Start(context.Background(), 5*time.Second)
	defer cancel()
	wantSent(t, "unary", do(ctx, c, ""), budget.NotSent)
	wantSent(t, "stream", stream(ctx, c, 1), budget.NotSent)
}

// The interceptor's own refusal never leaves the process: NotSent.
func TestClientLocalRefusalIsNotSent(t *testing.T) {
	t.Parallel()
	c, svc := serve(t, nil, withClient(edge.WithMinUseful(time.Second))...)
	ctx, cancel := budget.Start(context.Background(), 100*ms)
	defer cancel()
	wantSent(t, "unary", do(ctx, c, ""), budget.NotSent)
	wantSent(t, "stream", stream(ctx, c, 1), budget.NotSent)
	if n := svc.calls.Load(); n != 0 {
		t.Fatalf("refused calls reached the handler %d times", n)
	}
}

// A status the handler returned is Executed, even with a code (CANCELLED)
// that grpc-go also makes up for a reset stream: the trailers-only answer
// says the server sent it.
func TestClientHandlerStatusIsExecuted(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, nil, withClient()...)
	ctx, cancel := budget.Start(context.Background(), 5*time.Second)
	defer cancel()
	wantSent(t, "unary", do(ctx, c, "cancel-now"), budget.Executed)
}

// A call abandoned after the request was written, before an answer, may
// have run: MaybeExecuted.
func TestClientAbandonedCallIsMaybeExecuted(t *testing.T) {
	t.Parallel()
	c, svc := serve(t, nil, withClient()...)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFor(t, func() bool { return svc.calls.Load() == 1 })
		cancel()
	}()
	wantSent(t, "unary", do(ctx, c, "hang"), budget.MaybeExecuted)
}

// A refusal on arrival by the server's interceptor carries the
// "budget-no-retry: shed" trailer, which the client reads as ServerRefused.
func TestClientServerRefusalIsServerRefused(t *testing.T) {
	t.Parallel()
	p := &wire.Policy{Min: time.Hour}
	c, svc := serve(t, withServer(grpcbudget.UnaryServerInterceptor(edge.WithPolicy(p)),
		grpcbudget.StreamServerInterceptor(edge.WithPolicy(p))), withClient()...)
	ctx, cancel := budget.Start(context.Background(), 5*time.Second)
	defer cancel()
	wantSent(t, "unary", do(ctx, c, ""), budget.ServerRefused)
	wantSent(t, "stream", stream(ctx, c, 1), budget.ServerRefused)
	if n := svc.calls.Load(); n != 0 {
		t.Fatalf("refused calls reached the handler %d times", n)
	}
}

// The idempotency key of the caller's context goes with every attempt, the
// same on each, quoted as the Idempotency-Key header writes it; a key the
// caller put in the metadata itself is kept.
func TestClientSendsTheIdempotencyKey(t *testing.T) {
	t.Parallel()
	c, svc := serve(t, nil, withClient()...)
	ctx := budget.WithIdempotencyKey(context.Background())
	key, _ := budget.IdempotencyKeyFrom(ctx)
	want, _ := wire.FormatIdempotencyKey(key)
	for i := range 2 {
		if err := do(ctx, c, ""); err != nil {
			t.Fatal(err)
		}
		if got := svc.last().md[grpcbudget.IdempotencyKeyKey]; len(got) != 1 || got[0] != want {
			t.Errorf("attempt %d sent %q, want [%q]", i+1, got, want)
		}
	}
	if err := stream(ctx, c, 1); err != nil {
		t.Fatal(err)
	}
	if got := svc.last().md[grpcbudget.IdempotencyKeyKey]; len(got) != 1 || got[0] != want {
		t.Errorf("stream sent %q, want [%q]", got, want)
	}
	own := metadataContext(ctx, grpcbudget.IdempotencyKeyKey, "mine")
	if err := do(own, c, ""); err != nil {
		t.Fatal(err)
	}
	if got := svc.last().md[grpcbudget.IdempotencyKeyKey]; len(got) != 1 || got[0] != "mine" {
		t.Errorf("with the caller's own key: sent %q, want [mine]", got)
	}
	if err := do(context.Background(), c, ""); err != nil {
		t.Fatal(err)
	}
	if got := svc.last().md[grpcbudget.IdempotencyKeyKey]; len(got) != 0 {
		t.Errorf("without a key: sent %q", got)
	}
}

// metadataContext returns ctx with k: v in its outgoing metadata.
func metadataContext(ctx context.Context, k, v string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, k, v)
}

// retried runs call under a Retry of three attempts that retries anything,
// and returns its error and the number of attempts made.
func retried(ctx context.Context, call func(ctx context.Context) error) (int, error) {
	n := 0
	err := (&budget.Retry{MaxAttempts: 3, Backoff: -1, Idempotent: true}).Do(ctx, &budget.Op{Name: "call"},
		func(ctx context.Context) error {
			n++
			return call(ctx)
		})
	return n, err
}

// A server that shed the call on arrival, or whose handler gave up after
// its own retries, says "budget-no-retry" in its trailer; the client marks
// the error so that Retry makes no second attempt, and a server relaying
// it gives up in turn. Before the change the client retried both three
// times, the handler running three times.
func TestClientObeysTheNoRetryMarker(t *testing.T) {
	t.Parallel()
	ctx, cancel := budget.Start(context.Background(), 5*time.Second)
	defer cancel()

	c, svc := serve(t, withServer(grpcbudget.UnaryServerInterceptor(), grpcbudget.StreamServerInterceptor()), withClient()...)
	n, err := retried(ctx, func(ctx context.Context) error { return do(ctx, c, "gave-up") })
	if n != 1 || svc.calls.Load() != 1 {
		t.Errorf("gave up: %d attempts, the handler ran %d times; want 1 and 1", n, svc.calls.Load())
	}
	wantSent(t, "gave up", err, budget.Executed)
	if !budget.GaveUp(err) {
		t.Errorf("gave up: %v does not report GaveUp, so a server relaying it would not pass the marker on", err)
	}
	if status.Code(err) != codes.Unknown {
		t.Errorf("gave up: code %v, want the handler's UNKNOWN", status.Code(err))
	}
	n, err = retried(ctx, func(ctx context.Context) error {
		st, err := c.StreamingOutputCall(ctx, &grpc_testing.StreamingOutputCallRequest{Payload: &grpc_testing.Payload{Body: []byte("gave-up")}})
		if err != nil {
			return err
		}
		_, err = st.Recv()
		return err
	})
	if n != 1 || svc.calls.Load() != 2 {
		t.Errorf("a stream that gave up: %d attempts, the handler ran %d times in all; want 1 and 2", n, svc.calls.Load())
	}
	wantSent(t, "a stream that gave up", err, budget.Executed)
	if !budget.GaveUp(err) {
		t.Errorf("a stream that gave up: %v does not report GaveUp", err)
	}

	p := &wire.Policy{Min: time.Hour}
	shed, svc2 := serve(t, withServer(grpcbudget.UnaryServerInterceptor(edge.WithPolicy(p)),
		grpcbudget.StreamServerInterceptor(edge.WithPolicy(p))), withClient()...)
	for _, kind := range []string{"unary", "stream"} {
		n, err := retried(ctx, func(ctx context.Context) error {
			if kind == "unary" {
				return do(ctx, shed, "")
			}
			return stream(ctx, shed, 1)
		})
		if n != 1 {
			t.Errorf("shed %s: %d attempts, want 1", kind, n)
		}
		wantSent(t, "shed "+kind, err, budget.ServerRefused)
		if status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("shed %s: code %v, want DEADLINE_EXCEEDED", kind, status.Code(err))
		}
	}
	if n := svc2.calls.Load(); n != 0 {
		t.Errorf("shed calls reached the handler %d times", n)
	}
}
