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
	"github.com/timebudget/budget/wire"
)

// HeaderMessageTimeout is the header in which a client asks for a
// per-message budget on a stream, in whole milliseconds (1 to 10 digits, not
// zero), as Request-Timeout-Ms spells a call's budget. It equals
// [wire.HeaderRequestMessageTimeout], the name grpcbudget sends in gRPC
// metadata too (MessageTimeoutKey, in lower case), and is read with
// [wire.ParseRequestMessageTimeout]. A server with [NewServerInterceptor]
// honours it when its inbound policy trusts Request-Timeout-Ms
// ([wire.SourceRequestTimeout]), and never grants more than its own
// [WithMessageBudget].
const HeaderMessageTimeout = wire.HeaderRequestMessageTimeout

// ErrIdle is matched by the error of a stream ended by [WithIdleTimeout]:
// its peer sent nothing for the idle timeout. The error also matches
// [context.DeadlineExceeded] and carries connect.CodeDeadlineExceeded.
var ErrIdle = errors.New("connectbudget: stream idle")

// idleError says which side of a stream went quiet, and for how long.
type idleError struct {
	stage string
	quiet string // "client" or "server"
	d     time.Duration
}

func (e *idleError) Error() string {
	return fmt.Sprintf("connectbudget: %s: the %s sent nothing for %v (idle timeout)", e.stage, e.quiet, e.d)
}

// Is reports whether target is ErrIdle or context.DeadlineExceeded.
func (e *idleError) Is(target error) bool {
	return target == ErrIdle || target == context.DeadlineExceeded
}

// messageError is the error of a client stream operation that took longer
// than the per-message budget.
type messageError struct {
	stage string
	what  string // "Send" or "Receive"
	d     time.Duration
}

func (e *messageError) Error() string {
	return fmt.Sprintf("connectbudget: %s: %s took longer than the per-message budget of %v", e.stage, e.what, e.d)
}

// Is reports whether target is context.DeadlineExceeded.
func (e *messageError) Is(target error) bool { return target == context.DeadlineExceeded }

// streamKey is the context key of a server stream's *handlerConn.
type streamKey struct{}

// MessageContext returns the context of the message a stream's handler
// received last, when [WithMessageBudget] (or the caller, see
// [HeaderMessageTimeout]) gives the stream a per-message budget or
// [WithMessageAdmission] a per-message op: ctx is the
// handler's context, and the message's context is a child of it whose
// deadline is the per-message budget after the message arrived, or the
// stream's deadline when that is earlier. The message's context ends at
// its deadline, when the handler receives the next message, or when the
// stream ends, and at once for a message the op refused; do the message's work in it, so that a message that hangs
// is given up at its budget while the stream goes on. Before the first
// message, outside such a stream, or for a unary call, MessageContext
// returns ctx.
func MessageContext(ctx context.Context) context.Context {
	hc, _ := ctx.Value(streamKey{}).(*handlerConn)
	if hc == nil {
		return ctx
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.msgCtx == nil {
		return ctx
	}
	return hc.msgCtx
}

// messageBudget is the per-message budget of a stream arriving with header
// under policy p (nil when enforcement is off).
func (s *server) messageBudget(p *wire.Policy, header http.Header) time.Duration {
	d := s.cfg.message
	if p == nil {
		return d
	}
	trust := p.Trust
	if trust == 0 {
		trust = wire.SourcesDefault
	}
	if !trust.Has(wire.SourceRequestTimeout) {
		return d
	}
	v := header.Get(HeaderMessageTimeout)
	if v == "" {
		return d
	}
	asked, ok, err := wire.ParseRequestMessageTimeout(v)
	if !ok || err != nil {
		return d
	}
	// The caller waits asked for each answer: the handler gives up a tenth
	// earlier, so that its answer arrives before then.
	asked -= asked / 10
	if d > 0 {
		return min(d, asked)
	}
	return asked
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

	mu        sync.Mutex
	msgCtx    context.Context
	msgCancel context.CancelCauseFunc
	attempt   *messageAttempt // the admitted attempt of the message last received
	idleErr   error           // set once the peer went quiet
	abandoned error           // set once a Receive was left running: the stream is over
	timer     *time.Timer
	done      chan error // the result of a Receive run in its own goroutine
}

func newHandlerConn(ctx context.Context, conn connect.StreamingHandlerConn, perMessage, idle time.Duration, stage string) *handlerConn {
	hc := &handlerConn{StreamingHandlerConn: conn, perMessage: perMessage, idle: idle, stage: stage}
	hc.ctx, hc.cancel = context.WithCancelCause(ctx)
	if idle > 0 {
		hc.done = make(chan error, 1)
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
	if hc.idle > 0 {
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

// receiveIdle runs the wrapped Receive in a goroutine and waits for it at
// most the idle timeout. A Receive blocked in reading the request cannot be
// interrupted from here; when the peer went quiet, the goroutine is left to
// end with the stream, when connect-go closes the request, and the message
// it was given must not be used.
func (hc *handlerConn) receiveIdle(msg any) error {
	hc.mu.Lock()
	if hc.abandoned != nil {
		err := hc.abandoned
		hc.mu.Unlock()
		return err
	}
	if hc.timer == nil {
		hc.timer = time.NewTimer(hc.idle)
	} else {
		hc.timer.Reset(hc.idle)
	}
	timer := hc.timer
	hc.mu.Unlock()
	started := time.Now()
	go func() { hc.done <- hc.StreamingHandlerConn.Receive(msg) }()
	select {
	case err := <-hc.done:
		timer.Stop()
		return err
	case <-timer.C:
		idle := &idleError{stage: hc.stage, quiet: "client", d: hc.idle}
		err := connect.NewError(connect.CodeDeadlineExceeded, idle)
		hc.mu.Lock()
		hc.idleErr, hc.abandoned = idle, err
		hc.mu.Unlock()
		ev := budget.Event{Kind: budget.EventAttempt, Stage: hc.stage + " receive", At: started,
			Duration: time.Since(started), Outcome: budget.OutcomeExpired, Err: idle}
		if hc.observer != nil {
			hc.observer.Observe(hc.ctx, ev)
		} else {
			budget.Note(hc.ctx, ev)
		}
		hc.cancel(idle)
		return err
	case <-hc.ctx.Done():
		timer.Stop()
		err := connect.NewError(CodeOf(hc.ctx, hc.ctx.Err()), context.Cause(hc.ctx))
		hc.mu.Lock()
		hc.abandoned = err
		hc.mu.Unlock()
		return err
	}
}

// idleError returns the error of the idle timeout, once the peer went
// quiet.
func (hc *handlerConn) idleError() error {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return hc.idleErr
}

// end releases the stream's contexts once its handler returned.
func (hc *handlerConn) end() {
	hc.endMessage(time.Now())
	hc.mu.Lock()
	cancel := hc.msgCancel
	hc.msgCancel = nil
	if hc.timer != nil {
		hc.timer.Stop()
	}
	hc.mu.Unlock()
	if cancel != nil {
		cancel(context.Canceled)
	}
	hc.cancel(context.Canceled)
}
