package connectbudget

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// NewClientInterceptor returns an interceptor that sends each call's
// remaining budget and refuses, without a network call, calls that cannot
// finish in it, unary and streaming alike. It leaves calls a server handles
// unchanged; see [NewServerInterceptor] for those.
//
// For a call whose context has a deadline it
//
//   - runs the call as one attempt of the procedure's op when
//     [edge.WithAdmission] gives it one: the op refuses a call its measurements
//     say cannot finish, bounds the attempt by its Cap and the budget's
//     reserve, and learns the call's latency;
//   - refuses the call locally when less than the minimum useful time is
//     left (after the transit allowance), so a timeout of zero or less is
//     never sent. The error matches [budget.ErrInsufficient] (or
//     [context.DeadlineExceeded] when the deadline has already passed) and
//     carries connect.CodeDeadlineExceeded;
//   - otherwise lets connect-go send the time left in the protocol's own
//     header (Connect-Timeout-Ms, or grpc-timeout for gRPC and gRPC-Web),
//     from the context's deadline less transit, and sends the same deadline
//     as Request-Timeout-Ms and Request-Deadline, as httpbudget's Transport
//     does: the relative value survives a proxy that drops the protocol's
//     header, and the absolute one lets the callee charge the call's
//     transit to the budget.
//
// A Canceled that arrives after the call's deadline has passed is reported
// as DeadlineExceeded (see [CodeOf]); that and every DeadlineExceeded ending
// a call with a deadline also match [context.DeadlineExceeded], as an
// expiry of the budget, while connect.CodeOf still reports the code and
// errors.As still finds the [*connect.Error]. It makes no retries of its
// own. Calls without a deadline are sent unchanged (through the op, when
// there is one).
//
// Streams also get the per-message budget of [WithMessageBudget] and the
// idle timeout of [WithIdleTimeout].
//
// Every call carries the idempotency key of its context
// ([budget.WithIdempotencyKey]) as the Idempotency-Key header, the same on
// every attempt and hedge; the context's key replaces one the request's
// header holds. Every error says how far the call got ([budget.SentOf]),
// which [budget.Retry] and [budget.Hedge] read so as not to repeat a call
// that may have run: [budget.NotSent] for a local refusal and a failure to
// connect (a refused dial, a DNS failure), [budget.Executed] for an error
// the server sent ([connect.IsWireError]), and [budget.MaybeExecuted]
// otherwise (the deadline, a lost connection, an answer connect-go could
// not read). An error the HTTP client's transport already classified
// (httpbudget's Transport) keeps its classification. An error the server
// sent with the Budget-No-Retry header ([wire.HeaderBudgetNoRetry], which
// the server's interceptor sends) is [budget.DoNotRetry]'s:
// [budget.ServerRefused] for "shed" (refused on arrival), [budget.Executed]
// for "retried" or any other value; [budget.Retry] does not retry it, and a
// handler that returns it gives up in turn.
func NewClientInterceptor(opts ...edge.ClientOption) connect.Interceptor {
	return &client{cfg: edge.ConfigureClient(clientConfig{ClientSettings: edge.ClientSettings{MinUseful: time.Millisecond}}, opts)}
}

type client struct{ cfg clientConfig }

func (c *client) op(procedure string) *budget.Op { return edge.OpOf(c.cfg.Ops, procedure) }

func (c *client) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if !req.Spec().IsClient {
			return next(ctx, req)
		}
		procedure := req.Spec().Procedure
		var resp connect.AnyResponse
		sent := false // next ran: the request may have left
		call := func(actx context.Context) error {
			octx, cancel, err := c.outgoing(actx, procedure, req.Header())
			if err != nil {
				return budget.MarkSent(err, budget.NotSent)
			}
			var cerr error
			sent = true
			resp, cerr = next(octx, req)
			err = c.result(octx, classify(cerr))
			if cancel != nil {
				cancel()
			}
			return err
		}
		var err error
		if op := c.op(procedure); op != nil {
			err = op.Do(ctx, call)
		} else {
			err = call(ctx)
		}
		if err != nil {
			if !sent {
				err = budget.MarkSent(err, budget.NotSent) // refused before any attempt
			}
			return resp, c.result(ctx, err)
		}
		return resp, nil
	}
}

// WrapStreamingHandler returns next unchanged: this interceptor makes calls.
func (c *client) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func (c *client) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		procedure := spec.Procedure
		if op := c.op(procedure); op != nil && ctx.Err() == nil {
			if dec := op.Admit(ctx); !dec.Admit {
				err := budget.Refuse(ctx, op.Name, time.Now(), dec.Available, dec.Needed)
				return &errConn{spec: spec, err: budget.MarkSent(c.result(ctx, err), budget.NotSent)}
			}
		}
		header := make(http.Header, 3)
		octx, cancel, err := c.outgoing(ctx, procedure, header)
		if err != nil {
			return &errConn{spec: spec, err: budget.MarkSent(c.result(ctx, err), budget.NotSent)}
		}
		if v, ok := wire.FormatRequestMessageTimeout(c.cfg.message); ok {
			header.Set(HeaderMessageTimeout, v)
		}
		sc := &clientConn{ctx: ctx, c: c, cancel: cancel, stage: procedure}
		if c.cfg.message > 0 || c.cfg.idle > 0 {
			octx, sc.cancelCause = context.WithCancelCause(octx)
			sc.sendErr = &messageError{stage: procedure, what: "Send", d: c.cfg.message}
			sc.recvErr = &messageError{stage: procedure, what: "Receive", d: c.cfg.message}
			sc.idleErr = &idleError{stage: procedure, quiet: "server", d: c.cfg.idle}
			sc.watch = edge.NewClientWatch(edge.StreamLimits{Message: c.cfg.message, Idle: c.cfg.idle}, sc.expire)
		}
		conn := next(octx, spec)
		for k, v := range header {
			conn.RequestHeader()[k] = v
		}
		sc.StreamingClientConn = conn
		return sc // even without a deadline, to classify its errors
	}
}

// outgoing checks that the call is worth sending and prepares its context
// (the transit allowance taken off its deadline) and header. cancel is nil
// when the context was not derived.
func (c *client) outgoing(ctx context.Context, procedure string, header http.Header) (context.Context, context.CancelFunc, error) {
	setIdempotencyKey(ctx, header)
	if v, ok := edge.CriticalityValue(ctx); ok {
		// The class goes with or without a deadline: no protocol header
		// of Connect's or gRPC's carries it.
		header[requestCriticalityKey] = []string{v}
	}
	if v, ok := edge.ProbeValue(ctx); ok {
		header[budgetProbeKey] = []string{v}
	}
	call, ok, err := edge.Send(ctx, c.cfg.stageOf(procedure), edge.Outbound{Transit: c.cfg.Transit, MinUseful: c.cfg.MinUseful})
	if !ok || err != nil {
		return ctx, nil, err
	}
	var cancel context.CancelFunc
	if c.cfg.Transit > 0 {
		ctx, cancel = context.WithDeadlineCause(ctx, call.Deadline, budget.ErrExpired)
	}
	var buf [24]byte
	header[requestTimeoutKey] = []string{string(call.AppendTimeout(buf[:0]))}
	if v, ok := call.AppendDeadline(buf[:0]); ok {
		header[requestDeadlineKey] = []string{string(v)}
	}
	if v, ok := call.AppendAttempt(buf[:0]); ok {
		header[requestAttemptKey] = []string{string(v)}
	}
	return ctx, cancel, nil
}

// The canonical keys of the headers the client sends.
var (
	requestTimeoutKey  = http.CanonicalHeaderKey(wire.HeaderRequestTimeout)
	requestDeadlineKey = http.CanonicalHeaderKey(wire.HeaderRequestDeadline)
	requestAttemptKey  = http.CanonicalHeaderKey(wire.HeaderRequestAttempt)

	requestCriticalityKey = http.CanonicalHeaderKey(wire.HeaderRequestCriticality)
	budgetProbeKey        = http.CanonicalHeaderKey(wire.HeaderBudgetProbe)
)

// result gives a call's error its code, reporting a cancellation after the
// deadline as an expiry. A DeadlineExceeded that ends a call with a deadline
// is an expiry of the budget, so it is made to match
// [context.DeadlineExceeded] as well, which connect-go's errors from the
// wire do not.
func (c *client) result(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := ctx.Deadline(); ok && CodeOf(ctx, err) == connect.CodeDeadlineExceeded &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, budget.ErrInsufficient) {
		if code, ok := connectCode(err); ok && code == connect.CodeDeadlineExceeded {
			return &expiry{err: err}
		}
		return connect.NewError(connect.CodeDeadlineExceeded, &expiry{err: err})
	}
	return toConnect(ctx, err)
}

// clientConn maps the errors of a stream's operations as the interceptor
// maps a unary call's, and bounds them by the per-message budget and the
// idle timeout under the rule of [edge.ClientWatch]: one timer for sending,
// one for receiving, and a receive counted only while the client awaits an
// answer.
type clientConn struct {
	connect.StreamingClientConn
	ctx    context.Context    // the caller's
	c      *client            // configuration
	stage  string             // the procedure
	cancel context.CancelFunc // of the transit deadline; nil when none

	// With a per-message budget or an idle timeout: the watch, and the
	// stream's context's cancel, called with the cause of the limit that
	// ran out.
	watch                     *edge.ClientWatch
	cancelCause               context.CancelCauseFunc
	sendErr, recvErr, idleErr error

	mu     sync.Mutex
	closed bool
}

// cause is the error of an expiry.
func (s *clientConn) cause(e edge.Expiry) error {
	switch {
	case e.Send:
		return s.sendErr
	case e.Limit == edge.LimitIdle:
		return s.idleErr
	}
	return s.recvErr
}

// expire cancels the stream when one of its limits ran out.
func (s *clientConn) expire(e edge.Expiry) { s.cancelCause(s.cause(e)) }

// overran returns the error of an operation that ended with err, when the
// watch cut the stream off, recording the overrun in the caller's ledger;
// or nil when it did not.
func (s *clientConn) overran(err error, what string) error {
	if err == nil || s.watch == nil {
		return nil
	}
	e, ok := s.watch.Expired()
	if !ok {
		return nil
	}
	cause := s.cause(e)
	budget.Note(s.ctx, budget.Event{Kind: budget.EventAttempt, Stage: s.stage + " " + what, At: e.Start,
		Duration: e.Waited, Outcome: budget.OutcomeExpired, Err: cause})
	return connect.NewError(connect.CodeDeadlineExceeded, cause)
}

// done releases the stream's derived contexts once the stream is over.
func (s *clientConn) done() {
	s.mu.Lock()
	closed := s.closed
	s.closed = true
	s.mu.Unlock()
	if closed {
		return
	}
	if s.watch != nil {
		s.watch.Stop()
		s.cancelCause(context.Canceled)
	}
	if s.cancel != nil {
		s.cancel()
	}
}

// Send sends a message, within the per-message budget when there is one.
func (s *clientConn) Send(msg any) error {
	var err error
	if s.watch != nil {
		s.watch.BeginSend()
		err = s.StreamingClientConn.Send(msg)
		s.watch.EndSend(err == nil)
	} else {
		err = s.StreamingClientConn.Send(msg)
	}
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	if e := s.overran(err, "Send"); e != nil {
		return budget.MarkSent(e, budget.MaybeExecuted)
	}
	return s.c.result(s.ctx, classify(err))
}

// CloseRequest closes the send side: from then on every Receive awaits the
// server's answer, and is bounded.
func (s *clientConn) CloseRequest() error {
	if s.watch != nil {
		s.watch.CloseSend()
	}
	return s.StreamingClientConn.CloseRequest()
}

// Receive receives a message, within the per-message budget and the idle
// timeout when there are any, counted while the client awaits an answer.
func (s *clientConn) Receive(msg any) error {
	var err error
	if s.watch != nil {
		s.watch.BeginReceive()
		err = s.StreamingClientConn.Receive(msg)
		s.watch.EndReceive(err == nil)
	} else {
		err = s.StreamingClientConn.Receive(msg)
	}
	if err == nil {
		return nil
	}
	s.done() // the stream is over
	if errors.Is(err, io.EOF) {
		return err
	}
	if e := s.overran(err, "Receive"); e != nil {
		return budget.MarkSent(e, budget.MaybeExecuted)
	}
	return s.c.result(s.ctx, classify(err))
}

// CloseResponse closes the response and releases the stream's contexts.
func (s *clientConn) CloseResponse() error {
	err := s.StreamingClientConn.CloseResponse()
	s.done()
	return err
}

// errConn is a stream that was refused before it was opened: every
// operation returns the refusal.
type errConn struct {
	spec connect.Spec
	err  error
	req  http.Header
}

func (e *errConn) Spec() connect.Spec { return e.spec }
func (e *errConn) Peer() connect.Peer { return connect.Peer{} }
func (e *errConn) Send(any) error     { return e.err }
func (e *errConn) RequestHeader() http.Header {
	if e.req == nil {
		e.req = make(http.Header)
	}
	return e.req
}
func (e *errConn) CloseRequest() error          { return e.err }
func (e *errConn) Receive(any) error            { return e.err }
func (e *errConn) ResponseHeader() http.Header  { return make(http.Header) }
func (e *errConn) ResponseTrailer() http.Header { return make(http.Header) }
func (e *errConn) CloseResponse() error         { return nil }
