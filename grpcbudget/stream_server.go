package grpcbudget

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
)

// streamLimits prepares a stream's per-message budget and idle watch, after
// the policy admitted it with ctx. It returns the context and stream to give
// the handler (ss and ctx unchanged when the stream has neither), the watch
// whose end must be called with the handler's error (nil when none), or the
// error refusing the stream: a malformed per-message budget under a strict
// policy ([edge.MessageBudget] decides, as for every adapter).
func (s *server) streamLimits(ss grpc.ServerStream, ctx context.Context) (grpc.ServerStream, context.Context, *idleWatch, error) {
	cfg := s.cfg.stream
	var sent []string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		sent = md[MessageTimeoutKey]
	}
	d, err := edge.MessageBudget(ctx, s.cfg.Observer, s.cfg.Policy.Load(), cfg.message, sent)
	if err != nil {
		return nil, nil, nil, &codedError{code: codes.InvalidArgument, err: err}
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
	w := &idleWatch{ServerStream: ss, obs: s.cfg.Observer, quiet: &idleError{side: "client", idle: cfg.idle}}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	w.recv = edge.NewIdleReceiver(cfg.idle, ss.RecvMsg, w.quiet)
	return w, w.ctx, w, nil
}

// idleWatch is a server stream whose RecvMsg gives up when the client sends
// nothing for the idle timeout ([edge.IdleReceiver] waits). RecvMsg and end
// are safe for concurrent use: a handler may return while a goroutine of its
// own is still in RecvMsg.
type idleWatch struct {
	grpc.ServerStream
	ctx    context.Context
	cancel context.CancelCauseFunc
	obs    budget.Observer
	quiet  *idleError
	recv   *edge.IdleReceiver
}

func (w *idleWatch) Context() context.Context { return w.ctx }

func (w *idleWatch) RecvMsg(m any) error {
	start := time.Now()
	quiet, err := w.recv.Receive(w.ctx, m)
	if quiet {
		noteIdle(w.ctx, w.obs, w.quiet, start, time.Since(start))
		w.cancel(w.quiet)
	}
	return err
}

// end releases the watch once the handler returned err, and returns the
// stream's error: the idle error when the client went quiet, whatever the
// handler made of it.
func (w *idleWatch) end(err error) error {
	w.cancel(nil)
	w.recv.Close()
	if w.recv.Quiet() {
		return &codedError{code: codes.DeadlineExceeded, err: w.quiet}
	}
	return err
}
