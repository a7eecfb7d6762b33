package grpcbudget

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// clientWatch bounds each SendMsg and RecvMsg of one client stream by the
// rule of [edge.ClientWatch]: a wait past its limit cancels the stream's
// context with the reason as cause, which is the only way to stop a blocked
// grpc-go stream operation.
type clientWatch struct {
	caller  context.Context // the caller's context, whose ledger records an overrun
	ctx     context.Context // the stream's context, canceled to stop it
	cancel  context.CancelCauseFunc
	idleErr *idleError // what a RecvMsg past the idle timeout ends with
	watch   *edge.ClientWatch
}

// watchStream prepares the watch of a stream about to be opened with octx,
// derived from the caller's ctx. It returns octx unchanged and a nil watch
// when the client sets neither a per-message budget nor an idle timeout.
func (c *client) watchStream(ctx, octx context.Context) (context.Context, *clientWatch) {
	sc := c.cfg.stream
	if sc.message <= 0 && sc.idle <= 0 {
		return octx, nil
	}
	if v, ok := wire.FormatRequestMessageTimeout(sc.message); ok {
		octx = metadata.AppendToOutgoingContext(octx, MessageTimeoutKey, v)
	}
	w := &clientWatch{caller: ctx, idleErr: &idleError{side: "server", idle: sc.idle}}
	w.ctx, w.cancel = context.WithCancelCause(octx)
	w.watch = edge.NewClientWatch(edge.StreamLimits{Message: sc.message, Idle: sc.idle}, w.expire)
	return w.ctx, w
}

// expire cancels the stream when one of its limits ran out.
func (w *clientWatch) expire(e edge.Expiry) {
	if e.Limit == edge.LimitIdle {
		w.cancel(w.idleErr)
		return
	}
	w.cancel(ErrMessageBudget)
}

// overran returns the error of an operation that ended with err, when the
// watch cut it off, recording the overrun in the caller's ledger; or nil
// when it did not.
func (w *clientWatch) overran(err error) error {
	if err == nil {
		return nil
	}
	e, ok := w.watch.Expired()
	if !ok {
		return nil
	}
	if e.Limit == edge.LimitIdle {
		noteIdle(w.caller, nil, w.idleErr, e.Start, e.Waited)
		return &codedError{code: codes.DeadlineExceeded, err: w.idleErr}
	}
	budget.Note(w.caller, budget.Event{Kind: budget.EventAttempt, Stage: MessageStage, At: e.Start,
		Duration: e.Waited, Outcome: budget.OutcomeExpired, Err: ErrMessageBudget})
	return &codedError{code: codes.DeadlineExceeded, err: ErrMessageBudget}
}

// release stops the timers and the stream's context once the stream is over.
func (w *clientWatch) release() {
	if w == nil {
		return
	}
	w.watch.Stop()
	w.cancel(nil)
}

// wrap returns cs with its operations bounded by w; cs itself when w is nil.
func (w *clientWatch) wrap(cs grpc.ClientStream, desc *grpc.StreamDesc) grpc.ClientStream {
	if w == nil {
		return cs
	}
	return &watchedClientStream{ClientStream: cs, w: w, serverStreams: desc != nil && desc.ServerStreams}
}

// watchedClientStream is a client stream whose SendMsg and RecvMsg each wait
// at most their limit. A RecvMsg may run beside a SendMsg, as grpc-go
// allows; each has its own timer.
type watchedClientStream struct {
	grpc.ClientStream
	w             *clientWatch
	serverStreams bool
}

func (s *watchedClientStream) RecvMsg(m any) error {
	s.w.watch.BeginReceive()
	err := s.ClientStream.RecvMsg(m)
	s.w.watch.EndReceive(err == nil)
	if err != nil || !s.serverStreams {
		s.w.release() // the stream is over: an error, io.EOF, or the one reply
	}
	if e := s.w.overran(err); e != nil {
		return markSent(e, budget.MaybeExecuted)
	}
	return err
}

func (s *watchedClientStream) SendMsg(m any) error {
	s.w.watch.BeginSend()
	err := s.ClientStream.SendMsg(m)
	s.w.watch.EndSend(err == nil)
	if err == nil || isEOF(err) {
		// io.EOF: the stream failed; RecvMsg reports how, and releases it.
		return err
	}
	s.w.release()
	if e := s.w.overran(err); e != nil {
		return markSent(e, budget.MaybeExecuted)
	}
	return err
}

// CloseSend closes the send side: from then on every RecvMsg awaits the
// server's answer, and is bounded.
func (s *watchedClientStream) CloseSend() error {
	s.w.watch.CloseSend()
	return s.ClientStream.CloseSend()
}

func (s *watchedClientStream) Header() (metadata.MD, error) {
	md, err := s.ClientStream.Header()
	if err != nil {
		s.w.release()
	}
	return md, err
}
