package grpcbudget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
)

// UnaryClientInterceptor returns an interceptor that sends each call's
// remaining budget and refuses, without a network call, calls that cannot
// finish in it.
//
// For a call whose context has a deadline it
//
//   - runs the call as one attempt of the method's op when [edge.WithAdmission]
//     gives it one: the op refuses a call its measurements say cannot finish,
//     bounds the attempt by its Cap and the budget's reserve, and learns the
//     call's latency;
//   - refuses the call locally when less than the minimum useful time is left
//     (after the transit allowance), so a timeout of zero or less is never
//     sent. The error matches [budget.ErrInsufficient] (or
//     [context.DeadlineExceeded] when the deadline has already passed) and
//     carries DEADLINE_EXCEEDED for status.Code;
//   - otherwise lets grpc-go send the time left as grpc-timeout (the context's
//     deadline, less transit) and, with [WithBudgetMetadata], the same
//     deadline as Request-Timeout-Ms and Request-Deadline.
//
// A CANCELLED that arrives after the call's deadline has passed is reported
// as DEADLINE_EXCEEDED (see [CodeOf]); that and every DEADLINE_EXCEEDED ending a
// call with a deadline also match [context.DeadlineExceeded], as an expiry
// of the budget. It makes no retries of its own. Calls without a deadline are sent unchanged
// (through the op, when there is one).
//
// Every call carries the idempotency key of its context
// ([budget.WithIdempotencyKey]) as [IdempotencyKeyKey] metadata, the same on
// every attempt and hedge. Every error says how far the call got
// ([budget.SentOf]), which [budget.Retry] and [budget.Hedge] read so as not
// to repeat a call that may have run: [budget.NotSent] for a local refusal
// and for a call for which grpc-go never created a transport stream (no
// ready connection), [budget.Executed] for a status the server sent, and
// [budget.MaybeExecuted] otherwise (the deadline, a lost connection). Telling
// these apart costs one allocation per call (grpc.Peer and grpc.Trailer
// call options). It errs toward MaybeExecuted: a connection lost between the
// creation of the transport stream and the writing of the request, and one
// of the codes grpc-go also makes up (UNAVAILABLE, INTERNAL, CANCELLED,
// DEADLINE_EXCEEDED, UNKNOWN) arriving after headers in trailers without
// metadata, read as MaybeExecuted. Under grpc-go's own retry policy the
// classification is that of grpc-go's last attempt; leave retries to one
// layer.
//
// A call answered with the "budget-no-retry" trailer ([wire.HeaderBudgetNoRetry],
// which the server's interceptor sends) returns [budget.DoNotRetry]'s error:
// [budget.ServerRefused] for "shed" (refused on arrival), [budget.Executed]
// for "retried" or any other value; [budget.Retry] does not retry it, and a
// handler that returns it gives up in turn.
func UnaryClientInterceptor(opts ...edge.ClientOption) grpc.UnaryClientInterceptor {
	c := newClient(opts)
	return c.unary
}

// StreamClientInterceptor returns the streaming counterpart of
// [UnaryClientInterceptor]. A stream is admitted or refused by the method's
// op before it is opened, but it does not teach the op its latency: a
// stream's lifetime is not the time a call takes. Its errors are classified
// as the unary interceptor's are: a stream grpc-go failed to open is
// [budget.NotSent], and an error from RecvMsg is classified by the trailer
// and status the server sent, if any.
func StreamClientInterceptor(opts ...edge.ClientOption) grpc.StreamClientInterceptor {
	c := newClient(opts)
	return c.stream
}

type client struct{ cfg clientConfig }

func newClient(opts []edge.ClientOption) *client {
	return &client{cfg: edge.ConfigureClient(clientConfig{ClientSettings: edge.ClientSettings{MinUseful: time.Millisecond}}, opts)}
}

func (c *client) op(method string) *budget.Op { return edge.OpOf(c.cfg.Ops, method) }

func (c *client) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if invoker == nil {
		return errNil("invoker")
	}
	sent := false // the invoker ran: the request may have left
	call := func(actx context.Context) error {
		octx, cancel, err := c.outgoing(actx, method)
		if err != nil {
			return markSent(err, budget.NotSent)
		}
		a := new(attemptInfo)
		sent = true
		err = a.classify(c.result(octx, invoker(octx, method, req, reply, cc, a.options(opts)...)))
		if cancel != nil {
			cancel()
		}
		return err
	}
	var err error
	if op := c.op(method); op != nil {
		err = op.Do(ctx, call)
	} else {
		err = call(ctx)
	}
	if err != nil && !sent {
		err = markSent(err, budget.NotSent) // refused before any attempt
	}
	return c.result(ctx, err)
}

func (c *client) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if streamer == nil {
		return nil, errNil("streamer")
	}
	if op := c.op(method); op != nil && ctx.Err() == nil {
		if dec := op.Admit(ctx); !dec.Admit {
			err := budget.Refuse(ctx, op.Name, time.Now(), dec.Available, dec.Needed)
			return nil, markSent(c.result(ctx, err), budget.NotSent)
		}
	}
	octx, cancel, err := c.outgoing(ctx, method)
	if err != nil {
		return nil, markSent(c.result(ctx, err), budget.NotSent)
	}
	octx, w := c.watchStream(ctx, octx)
	cs, err := streamer(octx, desc, cc, method, opts...)
	if err != nil {
		w.release()
		if cancel != nil {
			cancel()
		}
		// grpc-go returns an error here only when it could not create the
		// transport stream: nothing was written.
		return nil, markSent(c.result(ctx, err), budget.NotSent)
	}
	if cancel != nil {
		// The transit deadline lives as long as the stream. grpc-go documents
		// when a stream is over (grpc.ClientConn.NewStream): RecvMsg returned
		// a non-nil error (io.EOF included), or a message on a call whose
		// server does not stream (CloseAndRecv), or Header or SendMsg
		// returned an error other than io.EOF. The wrapper cancels then, so
		// the deadline's timer does not outlive the stream.
		return w.wrap(&clientStream{ClientStream: cs, ctx: ctx, c: c, cancel: cancel, serverStreams: desc != nil && desc.ServerStreams}, desc), nil
	}
	return w.wrap(&clientStream{ClientStream: cs, ctx: ctx, c: c}, desc), nil
}

// outgoing checks that the call is worth sending and prepares its context:
// the transit allowance taken off its deadline and, when configured, this
// library's metadata. cancel is nil when the context was not derived.
func (c *client) outgoing(ctx context.Context, method string) (context.Context, context.CancelFunc, error) {
	ctx = sendIdempotencyKey(withCriticality(ctx))
	call, ok, err := edge.Send(ctx, c.cfg.stageOf(method), edge.Outbound{Transit: c.cfg.Transit, MinUseful: c.cfg.MinUseful})
	if !ok || err != nil {
		return ctx, nil, err
	}
	var cancel context.CancelFunc
	if c.cfg.Transit > 0 {
		ctx, cancel = context.WithDeadlineCause(ctx, call.Deadline, budget.ErrExpired)
	}
	if c.cfg.metadata {
		var tbuf, dbuf, abuf [24]byte
		kv := []string{requestTimeoutKey, string(call.AppendTimeout(tbuf[:0]))}
		if dv, ok := call.AppendDeadline(dbuf[:0]); ok {
			kv = append(kv, requestDeadlineKey, string(dv))
		}
		if av, ok := call.AppendAttempt(abuf[:0]); ok {
			kv = append(kv, requestAttemptKey, string(av))
		}
		ctx = metadata.AppendToOutgoingContext(ctx, kv...)
	}
	return ctx, cancel, nil
}

const (
	requestTimeoutKey  = "request-timeout-ms"
	requestDeadlineKey = "request-deadline"
	requestAttemptKey  = "request-attempt"
)

// result gives a call's error its status code, reporting a cancellation after
// the deadline as an expiry. A DEADLINE_EXCEEDED that ends a call with a
// deadline is an expiry of the budget, so it is made to match
// [context.DeadlineExceeded] as well, which grpc-go's status errors do not.
// That holds even when it arrives a little before the call's own deadline:
// the callee measures the deadline it was sent with the transit charged and
// rounded down, so it ends first.
func (c *client) result(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := ctx.Deadline(); ok && CodeOf(ctx, err) == codes.DeadlineExceeded &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, budget.ErrInsufficient) {
		return newExpiry(err)
	}
	return toStatus(ctx, err)
}

// clientStream maps the errors of a stream's later operations as the
// interceptor maps the error of opening it.
type clientStream struct {
	grpc.ClientStream
	ctx           context.Context
	c             *client
	cancel        context.CancelFunc // nil when the context was not derived
	serverStreams bool               // the server sends more than one message
}

// done releases the stream's derived context once the stream is over.
func (s *clientStream) done() {
	if s.cancel != nil {
		s.cancel()
	}
}

func (s *clientStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil || !s.serverStreams {
		s.done() // the stream is over: an error, io.EOF, or the one reply
	}
	if err == nil || isEOF(err) {
		return err
	}
	// RecvMsg returned an error: the stream is over, and its trailer is
	// what the server sent, if anything.
	return answered(s.c.result(s.ctx, err), s.ClientStream.Trailer())
}

func (s *clientStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	if err == nil || isEOF(err) {
		return err
	}
	s.done()
	return markSent(s.c.result(s.ctx, err), budget.MaybeExecuted)
}

func (s *clientStream) Header() (metadata.MD, error) {
	md, err := s.ClientStream.Header()
	if err != nil {
		s.done()
		return md, markSent(s.c.result(s.ctx, err), budget.MaybeExecuted)
	}
	return md, nil
}

func isEOF(err error) bool { return err == io.EOF }

// errNil is the error of an interceptor called without the function it
// wraps, which grpc-go never does.
func errNil(what string) error {
	return fmt.Errorf("grpcbudget: client interceptor called with a nil %s: %w", what, budget.ErrMisconfigured)
}
