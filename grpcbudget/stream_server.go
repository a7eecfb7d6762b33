package grpcbudget

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// streamLimits prepares a stream's per-message budget and idle watch, after
// the policy admitted it with ctx. It returns the context and stream to give
// the handler (ss and ctx unchanged when the stream has neither), the watch
// whose end must be called with the handler's error (nil when none), or the
// error refusing the stream: a malformed per-message budget under a strict
// policy.
func (s *server) streamLimits(ss grpc.ServerStream, ctx context.Context) (grpc.ServerStream, context.Context, *idleWatch, error) {
	cfg := s.cfg.stream
	p := s.cfg.policy.Load()
	d := cfg.message
	if p != nil {
		sent, err := sentMessageBudget(ctx, p)
		if err != nil {
			if p.Strict {
				return nil, nil, nil, &codedError{code: codes.InvalidArgument, err: err}
			}
			if o := s.cfg.observer; o != nil {
				o.Observe(ctx, budget.Event{Kind: budget.EventMalformed, Stage: MessageTimeoutKey, At: time.Now(), Err: err})
			}
		}
		if sent > 0 && (d == 0 || sent < d) {
			d = sent
		}
		if p.Max > 0 && d > p.Max {
			d = p.Max
		}
	}
	if d > 0 || cfg.op != nil {
		ctx = context.WithValue(ctx, streamKey{}, &streamState{message: d, op: cfg.op})
	}
	if cfg.idle <= 0 {
		if ctx == ss.Context() {
			return ss, ctx, nil, nil
		}
		return &serverStream{ServerStream: ss, ctx: ctx}, ctx, nil, nil
	}
	w := &idleWatch{ServerStream: ss, idle: cfg.idle, obs: s.cfg.observer}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	return w, w.ctx, w, nil
}

// sentMessageBudget reads the per-message budget a client sent, when p
// trusts it: it is this library's relative value, trusted as
// Request-Timeout-Ms is. Zero means none was sent.
func sentMessageBudget(ctx context.Context, p *wire.Policy) (time.Duration, error) {
	trust := p.Trust
	if trust == 0 {
		trust = wire.SourcesDefault
	}
	if !trust.Has(wire.SourceRequestTimeout) {
		return 0, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	return parseMessageBudget(md[MessageTimeoutKey])
}

// parseMessageBudget parses the values of [MessageTimeoutKey]. A single
// value of 1 to 10 digits, not zero, is a budget, as
// [wire.ParseRequestMessageTimeout] reads it; anything else (several values,
// a sign, a unit, zero) is malformed, and the error names the key.
func parseMessageBudget(vals []string) (time.Duration, error) {
	switch len(vals) {
	case 0:
		return 0, nil
	case 1:
	default:
		return 0, &wire.ParseError{Header: MessageTimeoutKey, Value: short(vals[0]), Reason: "sent more than once"}
	}
	d, ok, err := wire.ParseRequestMessageTimeout(vals[0])
	var pe *wire.ParseError
	switch {
	case errors.As(err, &pe):
		return 0, &wire.ParseError{Header: MessageTimeoutKey, Value: pe.Value, Reason: pe.Reason}
	case err != nil || !ok:
		return 0, &wire.ParseError{Header: MessageTimeoutKey, Value: short(vals[0]), Reason: "empty"}
	}
	return d, nil
}

// short cuts an untrusted value to what an error may quote, copying it so
// that a long value is not kept alive.
func short(v string) string {
	const limit = 32
	if len(v) > limit {
		v = v[:limit]
	}
	return string([]byte(v))
}

// idleWatch is a server stream whose RecvMsg gives up when the client sends
// nothing for the idle timeout. grpc-go's RecvMsg returns only when a
// message arrives or the client's deadline passes, so the wait runs in a
// goroutine of the stream's own, and RecvMsg waits for it, for the timeout
// and for the handler's context.
type idleWatch struct {
	grpc.ServerStream
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   time.Duration
	obs    budget.Observer

	// Owned by the handler's goroutine (RecvMsg is not called concurrently).
	reqs   chan any   // messages to receive into; closed by end
	res    chan error // the receiver's answers; one slot, so it never blocks
	timer  *time.Timer
	gone   error // set when RecvMsg gave up: the stream is over
	reader bool  // the receiving goroutine has started
}

func (w *idleWatch) Context() context.Context { return w.ctx }

func (w *idleWatch) RecvMsg(m any) error {
	if w.gone != nil {
		return w.gone
	}
	if !w.reader {
		w.reader = true
		w.reqs, w.res = make(chan any), make(chan error, 1)
		w.timer = time.NewTimer(w.idle)
		go w.receive(w.reqs, w.res)
	} else {
		w.timer.Reset(w.idle)
	}
	start := time.Now()
	w.reqs <- m
	select {
	case err := <-w.res:
		w.timer.Stop()
		return err
	case <-w.timer.C:
		e := &idleError{side: "client", idle: w.idle}
		w.gone = e
		noteIdle(w.ctx, w.obs, e, start)
		w.cancel(e)
		return e
	case <-w.ctx.Done():
		w.timer.Stop()
		w.gone = context.Cause(w.ctx)
		return w.gone
	}
}

// receive runs grpc-go's RecvMsg for the handler, one message at a time,
// until end closes reqs. A RecvMsg the handler gave up on returns once
// grpc-go ends the stream, after the handler has returned.
func (w *idleWatch) receive(reqs <-chan any, res chan<- error) {
	for m := range reqs {
		res <- w.ServerStream.RecvMsg(m)
	}
}

// end releases the watch once the handler returned err, and returns the
// stream's error: the idle error when the client went quiet, whatever the
// handler made of it.
func (w *idleWatch) end(err error) error {
	if w.reader {
		close(w.reqs)
		w.timer.Stop()
	}
	w.cancel(nil)
	if e, ok := w.gone.(*idleError); ok {
		return &codedError{code: codes.DeadlineExceeded, err: e}
	}
	return err
}
