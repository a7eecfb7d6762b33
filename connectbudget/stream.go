package connectbudget

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// HeaderMessageTimeout is the header in which a client asks for a
// per-message budget on a stream, in whole milliseconds (1 to 10 digits, not
// zero), as Request-Timeout-Ms spells a call's budget. It equals
// [wire.HeaderRequestMessageTimeout], the name grpcbudget sends in gRPC
// metadata too (MessageTimeoutKey, in lower case), and is read with
// [wire.ParseRequestMessageTimeout]. A server with [NewServerInterceptor]
// decides it as every adapter does ([edge.MessageBudget]): it honours it
// when its inbound policy trusts Request-Timeout-Ms
// ([wire.SourceRequestTimeout]), keeps a tenth of it back as its answer
// margin, never grants more than its own [WithMessageBudget] nor the
// policy's Max, and refuses a malformed value with CodeInvalidArgument under
// a strict policy (reports it to the observer and ignores it otherwise).
const HeaderMessageTimeout = wire.HeaderRequestMessageTimeout

// ErrIdle is matched by the error of a stream ended by [WithIdleTimeout]:
// its peer sent nothing for the idle timeout. The error also matches
// [context.DeadlineExceeded] and carries connect.CodeDeadlineExceeded.
var ErrIdle = errors.New("connectbudget: stream idle")

// streamError is the error of a stream operation that ran out of a limit:
// the idle timeout, when quiet names the side that sent nothing ("client" or
// "server"), or the client's per-message budget, when what names the
// operation ("Send" or "Receive"). d is the limit. Its two names say at the
// sites that make one which limit it is.
type streamError struct {
	stage string
	quiet string
	what  string
	d     time.Duration
}

type (
	idleError    = streamError // the idle timeout ran out ([ErrIdle])
	messageError = streamError // a client's Send or Receive took longer than the per-message budget
)

func (e *streamError) Error() string {
	if e.quiet != "" {
		return fmt.Sprintf("connectbudget: %s: the %s sent nothing for %v (idle timeout)", e.stage, e.quiet, e.d)
	}
	return fmt.Sprintf("connectbudget: %s: %s took longer than the per-message budget of %v", e.stage, e.what, e.d)
}

// Is reports whether target is context.DeadlineExceeded, or ErrIdle for the
// idle timeout.
func (e *streamError) Is(target error) bool {
	return target == context.DeadlineExceeded || (target == ErrIdle && e.quiet != "")
}

// streamKey is the context key of a server stream's *handlerConn.
type streamKey struct{}

// MessageContext returns the context in which to handle the message a
// stream's handler received last, where ctx is the handler's context, with
// its cancel function, as grpcbudget.MessageContext does for gRPC streams.
// With a per-message budget ([WithMessageBudget], or the smaller one the
// caller asked for, see [HeaderMessageTimeout]) its deadline is the earlier
// of the stream's deadline and the budget counted from the message's
// arrival (its Receive); with a per-message op ([WithMessageAdmission]), the
// op's cap bounds it too, and a message the op refused has a context that
// is already done, whose [context.Cause] is the refusal. The message's
// context also ends when the handler receives the next message or the
// stream ends. Do the message's work in it, so that a message that hangs is
// given up at its budget while the stream goes on. Before the first
// message, outside such a stream, or for a unary call, it is ctx's child,
// ending only with ctx.
//
// Canceling the returned context releases resources associated with it, so
// code should call cancel as soon as the message is handled. It costs what
// [context.WithCancel] costs.
func MessageContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if hc, _ := ctx.Value(streamKey{}).(*handlerConn); hc != nil {
		hc.mu.Lock()
		mctx := hc.msgCtx
		hc.mu.Unlock()
		if mctx != nil {
			return context.WithCancel(mctx)
		}
	}
	return context.WithCancel(ctx)
}

// messageBudget is the per-message budget of a stream arriving with header
// under policy p (nil when enforcement is off), as [edge.MessageBudget]
// decides for every adapter; the error refuses the stream (a malformed
// value under a strict policy).
func (s *server) messageBudget(ctx context.Context, p *wire.Policy, header http.Header) (time.Duration, error) {
	d, err := edge.MessageBudget(ctx, s.cfg.Observer, p, s.cfg.message, header.Values(HeaderMessageTimeout))
	if err != nil {
		return 0, connect.NewError(connect.CodeInvalidArgument, err)
	}
	return d, nil
}

// handlerConn is a server stream with a per-message budget, an idle
// timeout, or both.
type handlerConn struct {
	connect.StreamingHandlerConn
	ctx        context.Context // the stream's budget
	cancel     context.CancelCauseFunc
	perMessage time.Duration
	idle       time.Duration
	stage      string
	// observer receives the idle event directly when the call has no
	// budget (the policy set no deadline), which budget.Note needs.
	observer budget.Observer

	// op admits each message, when WithMessageAdmission gives the
	// procedure one: a message is one attempt, from its receipt until the
	// handler asks for the next one or returns.
	op *budget.Op

	// recv waits for each message at most the idle timeout; nil when none.
	recv  *edge.IdleReceiver
	quiet *idleError // what a Receive past the idle timeout ends with

	mu        sync.Mutex
	msgCtx    context.Context
	msgCancel context.CancelCauseFunc
	attempt   *messageAttempt // the admitted attempt of the message last received
}

func newHandlerConn(ctx context.Context, conn connect.StreamingHandlerConn, perMessage, idle time.Duration, stage string) *handlerConn {
	hc := &handlerConn{StreamingHandlerConn: conn, perMessage: perMessage, idle: idle, stage: stage}
	hc.ctx, hc.cancel = context.WithCancelCause(ctx)
	if idle > 0 {
		hc.quiet = &idleError{stage: stage, quiet: "client", d: idle}
		hc.recv = edge.NewIdleReceiver(idle, conn.Receive, hc.quiet)
	}
	return hc
}

// messageAttempt is a message an op admitted, until its handling ends.
type messageAttempt struct {
	start time.Time
	ctx   context.Context
	probe bool
}

// Receive receives the next message and, with a per-message budget or a
// per-message op, starts that message's context. With an idle timeout, it
// waits at most that long.
func (hc *handlerConn) Receive(msg any) error {
	hc.endMessage(time.Now()) // asking for the next message ends the last one's handling
	var err error
	if hc.recv != nil {
		err = hc.receiveIdle(msg)
	} else {
		err = hc.StreamingHandlerConn.Receive(msg)
	}
	if err == nil && (hc.perMessage > 0 || hc.op != nil) {
		hc.startMessage(time.Now())
	}
	return err
}

// startMessage starts the context of a message received at now.
func (hc *handlerConn) startMessage(now time.Time) {
	var mctx context.Context
	var cancel context.CancelCauseFunc
	var attempt *messageAttempt
	deadline, bounded := hc.ctx.Deadline()
	if hc.perMessage > 0 && (!bounded || now.Add(hc.perMessage).Before(deadline)) {
		deadline, bounded = now.Add(hc.perMessage), true
	}
	if hc.op != nil {
		available := time.Duration(1<<63 - 1)
		if bounded {
			available = deadline.Sub(now)
		}
		adm := hc.op.BeginAt(now, budget.Ask{Available: available, Criticality: budget.CriticalityFrom(hc.ctx), Probe: budget.IsProbe(hc.ctx)})
		if !adm.Admit {
			// Refused: the message's context is over before it starts, and
			// says why; the handler skips the message.
			mctx, cancel = context.WithCancelCause(hc.ctx)
			cancel(budget.Refuse(hc.ctx, hc.op.Name, now, adm.Available, adm.Needed))
			hc.setMessage(mctx, cancel, nil)
			return
		}
		if adm.Cap > 0 && (!bounded || now.Add(adm.Cap).Before(deadline)) {
			deadline, bounded = now.Add(adm.Cap), true
		}
		attempt = &messageAttempt{start: now, probe: adm.Probe}
	}
	if bounded {
		var c context.CancelFunc
		mctx, c = context.WithDeadline(hc.ctx, deadline)
		cancel = func(error) { c() }
	} else {
		mctx, cancel = context.WithCancelCause(hc.ctx)
	}
	if attempt != nil {
		attempt.ctx = mctx
	}
	hc.setMessage(mctx, cancel, attempt)
}

// setMessage makes mctx the current message's context, ending the last
// one's.
func (hc *handlerConn) setMessage(mctx context.Context, cancel context.CancelCauseFunc, attempt *messageAttempt) {
	hc.mu.Lock()
	prev := hc.msgCancel
	hc.msgCtx, hc.msgCancel, hc.attempt = mctx, cancel, attempt
	hc.mu.Unlock()
	if prev != nil {
		prev(context.Canceled)
	}
}

// endMessage records the end, at now, of the last message's admitted
// attempt: a sample of the op's latency, or a censored one when the
// message's deadline had passed.
func (hc *handlerConn) endMessage(now time.Time) {
	hc.mu.Lock()
	a := hc.attempt
	hc.attempt = nil
	hc.mu.Unlock()
	if a == nil {
		return
	}
	outcome := budget.OutcomeOK
	if dl, ok := a.ctx.Deadline(); ok && !now.Before(dl) {
		outcome = budget.OutcomeExpired
	} else if a.ctx.Err() != nil && hc.ctx.Err() != nil {
		outcome = budget.OutcomeCanceled
	}
	hc.op.EndAt(a.start, now, outcome, a.probe)
}

// receiveIdle receives through the idle receiver ([edge.IdleReceiver]),
// which waits at most the idle timeout. A Receive blocked in reading the
// request cannot be interrupted from here; when the peer went quiet, it is
// left to end with the stream, when connect-go closes the request, and the
// message it was given must not be used.
func (hc *handlerConn) receiveIdle(msg any) error {
	started := time.Now()
	quiet, err := hc.recv.Receive(hc.ctx, msg)
	switch {
	case quiet:
		ev := budget.Event{Kind: budget.EventAttempt, Stage: hc.stage + " receive", At: started,
			Duration: time.Since(started), Outcome: budget.OutcomeExpired, Err: hc.quiet}
		if hc.observer != nil {
			hc.observer.Observe(hc.ctx, ev)
		} else {
			budget.Note(hc.ctx, ev)
		}
		hc.cancel(hc.quiet)
		return connect.NewError(connect.CodeDeadlineExceeded, hc.quiet)
	case err == hc.quiet:
		return connect.NewError(connect.CodeDeadlineExceeded, hc.quiet)
	case err != nil && hc.ctx.Err() != nil && err == context.Cause(hc.ctx):
		return connect.NewError(CodeOf(hc.ctx, hc.ctx.Err()), err)
	}
	return err
}

// idleError returns the error of the idle timeout, once the peer went
// quiet.
func (hc *handlerConn) idleError() error {
	if hc.recv != nil && hc.recv.Quiet() {
		return hc.quiet
	}
	return nil
}

// end releases the stream's contexts once its handler returned.
func (hc *handlerConn) end() {
	hc.endMessage(time.Now())
	hc.mu.Lock()
	cancel := hc.msgCancel
	hc.msgCancel = nil
	hc.mu.Unlock()
	if cancel != nil {
		cancel(context.Canceled)
	}
	hc.cancel(context.Canceled)
	if hc.recv != nil {
		hc.recv.Close()
	}
}
