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

// clientWatch bounds each SendMsg and RecvMsg of one client stream: a wait
// past its limit cancels the stream's context with the reason as cause,
// which is the only way to stop a blocked grpc-go stream operation.
type clientWatch struct {
	caller  context.Context // the caller's context, whose ledger records an overrun
	ctx     context.Context // the stream's context, canceled to stop it
	cancel  context.CancelCauseFunc
	message time.Duration
	idle    time.Duration
	idleErr error // what a RecvMsg past the idle timeout ends with

	recv, send *time.Timer // created on first use; armed only during an operation
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
	w := &clientWatch{caller: ctx, message: sc.message, idle: sc.idle, idleErr: &idleError{side: "server", idle: sc.idle}}
	w.ctx, w.cancel = context.WithCancelCause(octx)
	return w.ctx, w
}

// recvLimit is how long one RecvMsg may wait, and the error of a wait past it.
func (w *clientWatch) recvLimit() (time.Duration, error) {
	switch {
	case w.idle > 0 && (w.message <= 0 || w.idle <= w.message):
		return w.idle, w.idleErr
	case w.message > 0:
		return w.message, ErrMessageBudget
	}
	return 0, nil
}

// arm starts the timer *t for one operation of limit, creating it on first
// use; when it fires, the stream is canceled with cause.
func (w *clientWatch) arm(t **time.Timer, limit time.Duration, cause error) {
	if *t == nil {
		*t = time.AfterFunc(limit, func() { w.cancel(cause) })
		return
	}
	(*t).Reset(limit)
}

// overran returns the error of an operation that started at start and ended
// with err, when the watch cut it off, recording the overrun in the caller's
// ledger; or nil when it did not.
func (w *clientWatch) overran(err error, start time.Time) error {
	if err == nil || w.ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(w.ctx)
	var ie *idleError
	switch {
	case errors.As(cause, &ie):
		noteIdle(w.caller, nil, ie, start)
	case cause == ErrMessageBudget:
		budget.Note(w.caller, budget.Event{Kind: budget.EventAttempt, Stage: MessageStage, At: start,
			Duration: time.Since(start), Outcome: budget.OutcomeExpired, Err: cause})
	default:
		return nil
	}
	return &codedError{code: codes.DeadlineExceeded, err: cause}
}

// release stops the timers and the stream's context once the stream is over.
func (w *clientWatch) release() {
	if w == nil {
		return
	}
	if w.recv != nil {
		w.recv.Stop()
	}
	if w.send != nil {
		w.send.Stop()
	}
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
	limit, cause := s.w.recvLimit()
	if limit <= 0 {
		err := s.ClientStream.RecvMsg(m)
		if err != nil || !s.serverStreams {
			s.w.release()
		}
		return err
	}
	start := time.Now()
	s.w.arm(&s.w.recv, limit, cause)
	err := s.ClientStream.RecvMsg(m)
	s.w.recv.Stop()
	if err != nil || !s.serverStreams {
		s.w.release() // the stream is over: an error, io.EOF, or the one reply
	}
	if e := s.w.overran(err, start); e != nil {
		return e
	}
	return err
}

func (s *watchedClientStream) SendMsg(m any) error {
	if s.w.message <= 0 {
		err := s.ClientStream.SendMsg(m)
		if err != nil && !isEOF(err) {
			s.w.release()
		}
		return err
	}
	start := time.Now()
	s.w.arm(&s.w.send, s.w.message, ErrMessageBudget)
	err := s.ClientStream.SendMsg(m)
	s.w.send.Stop()
	if err == nil || isEOF(err) {
		// io.EOF: the stream failed; RecvMsg reports how, and releases it.
		return err
	}
	s.w.release()
	if e := s.w.overran(err, start); e != nil {
		return e
	}
	return err
}

func (s *watchedClientStream) Header() (metadata.MD, error) {
	md, err := s.ClientStream.Header()
	if err != nil {
		s.w.release()
	}
	return md, err
}
