package edge

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// StreamLimits are the per-message budget and the idle timeout of one side
// of a stream. The zero value sets neither.
type StreamLimits struct {
	// Message is the per-message budget: on a client, the longest one send
	// may take, and the longest one receive may wait for an answer; on a
	// server, the time each message's handling gets from its arrival. Zero
	// or negative means none.
	Message time.Duration
	// Idle is the idle timeout: the longest this side waits for its peer's
	// next message. Zero or negative means none.
	Idle time.Duration
}

// Limit names the limit a stream operation ran out of.
type Limit uint8

// The limits of [StreamLimits].
const (
	LimitNone    Limit = iota // no limit applies
	LimitMessage              // the per-message budget (StreamLimits.Message)
	LimitIdle                 // the idle timeout (StreamLimits.Idle)
)

// Receive returns how long one receive may wait and which limit that is: the
// smaller of Idle and Message, the idle timeout on a tie (the peer is then
// the one that went quiet), or zero and [LimitNone] when neither is set.
func (l StreamLimits) Receive() (time.Duration, Limit) {
	switch {
	case l.Idle > 0 && (l.Message <= 0 || l.Idle <= l.Message):
		return l.Idle, LimitIdle
	case l.Message > 0:
		return l.Message, LimitMessage
	}
	return 0, LimitNone
}

// Expiry describes a stream operation that ran out of its limit.
type Expiry struct {
	// Limit is the limit that ran out.
	Limit Limit
	// Send is set when a send ran out of time, and clear for a receive.
	Send bool
	// Start is when the wait began to count: a send's start; for a
	// receive, the later of its start and the moment a message it answers
	// was sent (or the send side closed).
	Start time.Time
	// Waited is how long the wait had counted when the limit ran out.
	Waited time.Duration
}

// ClientWatch applies [StreamLimits] to the client side of one stream, with
// one timer for sending and one for receiving, so that a client that sends
// often still has its receives bounded. The rule:
//
//   - A send waits at most Message.
//   - A receive waits at most the limit [StreamLimits.Receive] gives, but
//     that time runs only while the client awaits an answer: while a
//     message it sent has not been answered yet (each received message
//     answers one sent message), or once it has closed its send side
//     (every message is then awaited, as on a server-streaming call). The
//     time a receive waits while the client has asked nothing is the
//     client's own pause, not the server's slowness, and does not count.
//
// When a limit runs out, the watch calls the expire function given to
// [NewClientWatch] once, from a timer's goroutine; the adapter cancels the
// stream with its protocol's error there, which is the only way to stop a
// blocked stream operation. Send and receive may run at the same time, from
// two goroutines; all methods are safe for concurrent use. After the timers
// are made (on first use), the watch does not allocate.
type ClientWatch struct {
	limits StreamLimits
	expire func(Expiry)

	mu        sync.Mutex
	send      *time.Timer
	recv      *time.Timer
	sendStart time.Time
	recvStart time.Time
	sending   bool
	receiving bool   // a receive is in progress
	armed     bool   // the receive timer runs
	pending   int    // messages sent and not yet answered
	closed    bool   // the send side is closed
	expired   Expiry // the first expiry; Limit is LimitNone until then
	stopped   bool
}

// NewClientWatch returns the watch of one client stream under l. expire is
// called once, when the first limit runs out; it must not block.
func NewClientWatch(l StreamLimits, expire func(Expiry)) *ClientWatch {
	return &ClientWatch{limits: l, expire: expire}
}

// BeginSend starts the wait of one send.
func (w *ClientWatch) BeginSend() {
	if w.limits.Message <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.sending, w.sendStart = true, time.Now()
	if w.send == nil {
		w.send = time.AfterFunc(w.limits.Message, w.fireSend)
	} else {
		w.send.Reset(w.limits.Message)
	}
}

// EndSend ends the wait of a send, which sent its message when ok; that
// message then awaits an answer.
func (w *ClientWatch) EndSend(ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sending {
		w.sending = false
		w.send.Stop()
	}
	if ok {
		w.pending++
		w.armReceive()
	}
}

// CloseSend records that the client closed its send side: every receive is
// now awaited.
func (w *ClientWatch) CloseSend() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	w.armReceive()
}

// BeginReceive starts the wait of one receive.
func (w *ClientWatch) BeginReceive() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.receiving = true
	w.armReceive()
}

// EndReceive ends the wait of a receive, which received a message when ok;
// that message answers the oldest message awaiting one.
func (w *ClientWatch) EndReceive(ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.receiving = false
	if w.armed {
		w.armed = false
		w.recv.Stop()
	}
	if ok && w.pending > 0 {
		w.pending--
	}
}

// armReceive starts the receive timer when a receive is in progress, an
// answer is awaited, and the timer is not running yet. w.mu is held.
func (w *ClientWatch) armReceive() {
	if !w.receiving || w.armed || w.stopped || (w.pending == 0 && !w.closed) {
		return
	}
	d, _ := w.limits.Receive()
	if d <= 0 {
		return
	}
	w.armed, w.recvStart = true, time.Now()
	if w.recv == nil {
		w.recv = time.AfterFunc(d, w.fireReceive)
	} else {
		w.recv.Reset(d)
	}
}

func (w *ClientWatch) fireSend() {
	w.fire(true, LimitMessage, w.limits.Message, func() (bool, time.Time) { return w.sending, w.sendStart })
}

func (w *ClientWatch) fireReceive() {
	d, limit := w.limits.Receive()
	w.fire(false, limit, d, func() (bool, time.Time) { return w.armed, w.recvStart })
}

// fire records the expiry of a wait, when it is still running and has
// lasted its limit d (a timer that fired as its wait ended, and was reset
// for the next, must not end that one), and calls expire once.
func (w *ClientWatch) fire(send bool, limit Limit, d time.Duration, running func() (bool, time.Time)) {
	now := time.Now()
	w.mu.Lock()
	on, start := running()
	if !on || w.stopped || w.expired.Limit != LimitNone || now.Sub(start) < d {
		w.mu.Unlock()
		return
	}
	w.expired = Expiry{Limit: limit, Send: send, Start: start, Waited: now.Sub(start)}
	e := w.expired
	w.mu.Unlock()
	w.expire(e)
}

// Expired returns the expiry that ended the stream, and reports false while
// no limit has run out.
func (w *ClientWatch) Expired() (Expiry, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.expired, w.expired.Limit != LimitNone
}

// Stop stops the timers once the stream is over. It is safe to call more
// than once.
func (w *ClientWatch) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.send != nil {
		w.send.Stop()
	}
	if w.recv != nil {
		w.recv.Stop()
	}
}

// IdleReceiver waits for a server stream's messages at most the idle
// timeout. A blocked receive of a stream library cannot be interrupted from
// outside (grpc-go's RecvMsg and connect-go's Receive return only when a
// message arrives or the stream ends), so the receive runs in a goroutine of
// the stream's own, started on the first Receive, and Receive waits for it,
// for the timeout, and for the handler's context.
//
// Once a Receive gave up (the client went quiet, or the handler's context
// ended), every later Receive returns the same error: the receive left
// running will end with the stream, and the message it was given must not
// be used. A Receive after [IdleReceiver.Close] returns at once. Receive and
// Close are safe for concurrent use, so a handler that returns while a
// goroutine of its own is still in Receive is safe; as with the stream
// libraries, Receive itself must not be called from two goroutines at once.
// Each message costs two channel handoffs and no allocation.
type IdleReceiver struct {
	idle  time.Duration
	recv  func(m any) error
	quiet error // what Receive returns when the client went quiet

	done chan struct{} // closed by Close: the receiving goroutine ends
	reqs chan any      // messages to receive into; never closed
	res  chan error    // the receiver's answers; one slot, so it never blocks

	mu      sync.Mutex
	timer   *time.Timer
	started bool
	closed  bool
	gone    error // set once a Receive gave up
}

// NewIdleReceiver returns a receiver that calls recv (the stream's own
// receive) and waits for it at most idle; quiet is the error a Receive
// returns when the client sent nothing for idle.
func NewIdleReceiver(idle time.Duration, recv func(m any) error, quiet error) *IdleReceiver {
	return &IdleReceiver{idle: idle, recv: recv, quiet: quiet, done: make(chan struct{})}
}

// errReceiverClosed is what a Receive after Close returns when the context
// it was given is not done.
var errReceiverClosed = errors.New("edge: receive on a stream whose handler returned")

// Receive receives the next message into m. It returns recv's error; or,
// when the client sent nothing for the idle timeout, true and the quiet
// error (only the Receive that found the client quiet reports true, so that
// the adapter reports it once); or, when ctx ended first, ctx's cause.
func (r *IdleReceiver) Receive(ctx context.Context, m any) (quiet bool, err error) {
	r.mu.Lock()
	if r.gone != nil {
		defer r.mu.Unlock()
		return false, r.gone
	}
	if r.closed {
		r.mu.Unlock()
		return false, r.over(ctx)
	}
	if ctx.Err() != nil {
		r.gone = context.Cause(ctx)
		r.mu.Unlock()
		return false, r.gone
	}
	if !r.started {
		r.started = true
		r.reqs, r.res = make(chan any), make(chan error, 1)
		r.timer = time.NewTimer(r.idle)
		go r.receive()
	} else {
		r.timer.Reset(r.idle)
	}
	timer := r.timer
	r.mu.Unlock()
	select {
	case r.reqs <- m:
	case <-r.done:
		timer.Stop()
		return false, r.over(ctx)
	case <-ctx.Done():
		timer.Stop()
		return false, r.give(context.Cause(ctx))
	}
	select {
	case err := <-r.res:
		timer.Stop()
		return false, err
	case <-timer.C:
		return true, r.give(r.quiet)
	case <-ctx.Done():
		timer.Stop()
		return false, r.give(context.Cause(ctx))
	}
}

// give records that a Receive gave up with err.
func (r *IdleReceiver) give(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone == nil {
		r.gone = err
	}
	return r.gone
}

// over is the error of a Receive after Close.
func (r *IdleReceiver) over(ctx context.Context) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return errReceiverClosed
}

// receive runs recv for Receive, one message at a time, until Close.
func (r *IdleReceiver) receive() {
	for {
		select {
		case <-r.done:
			return
		default:
		}
		select {
		case m := <-r.reqs:
			r.res <- r.recv(m)
		case <-r.done:
			return
		}
	}
}

// Quiet reports whether a Receive found the client quiet.
func (r *IdleReceiver) Quiet() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gone != nil && r.gone == r.quiet
}

// Close releases the receiver once the handler returned: the receiving
// goroutine ends as soon as the receive it may be in returns (when the
// stream ends). It is safe to call more than once.
func (r *IdleReceiver) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	close(r.done)
	if r.timer != nil {
		r.timer.Stop()
	}
}

// MessageTimeoutName is [wire.HeaderRequestMessageTimeout] in lower case, as
// gRPC metadata spells it: the stage of the malformed-value events
// [MessageBudget] reports.
const MessageTimeoutName = "request-message-timeout-ms"

// MessageBudget decides the per-message budget of a server stream that
// arrived under policy p, for a server whose own per-message budget is own
// (zero for none), when the client sent vals as
// [wire.HeaderRequestMessageTimeout]. Every adapter calls it, so that one
// header gets one meaning:
//
//   - A nil p (enforcement off), or one that does not trust
//     Request-Timeout-Ms ([wire.SourceRequestTimeout]; the zero Trust does),
//     reads nothing: the budget is own.
//   - A single value of 1 to 10 digits, not zero, is the client's budget
//     ([wire.ParseRequestMessageTimeout]). The server keeps a tenth of it
//     back, as its answer margin, so that the answer to a message that ran
//     out arrives before the client stops waiting. The smaller of that and
//     own wins.
//   - Anything else (several values, a sign, a unit, zero, too many digits)
//     is malformed: under p.Strict the stream is refused with the returned
//     [*wire.ParseError], which names the header; otherwise it is reported
//     to obs as a [budget.EventMalformed] of stage [MessageTimeoutName] and
//     ignored.
//   - p.Max, when set, caps the result.
//
// The error is non-nil exactly when the stream must be refused. It
// allocates only to describe a malformed value.
func MessageBudget(ctx context.Context, obs budget.Observer, p *wire.Policy, own time.Duration, vals []string) (time.Duration, error) {
	d := max(own, 0)
	if p == nil {
		return d, nil
	}
	trust := p.Trust
	if trust == 0 {
		trust = wire.SourcesDefault
	}
	if trust.Has(wire.SourceRequestTimeout) && len(vals) > 0 {
		sent, err := parseMessageTimeout(vals)
		if err != nil {
			if p.Strict {
				return 0, err
			}
			if obs != nil {
				obs.Observe(ctx, budget.Event{Kind: budget.EventMalformed, Stage: MessageTimeoutName, At: time.Now(), Err: err})
			}
		}
		if sent -= sent / 10; sent > 0 && (d == 0 || sent < d) {
			d = sent
		}
	}
	if p.Max > 0 && d > p.Max {
		d = p.Max
	}
	return d, nil
}

// parseMessageTimeout parses the values of Request-Message-Timeout-Ms: one
// value, as [wire.ParseRequestMessageTimeout] reads it. The error names the
// header and quotes at most 32 bytes of the value, copied.
func parseMessageTimeout(vals []string) (time.Duration, error) {
	if len(vals) > 1 {
		return 0, &wire.ParseError{Header: wire.HeaderRequestMessageTimeout, Value: short(vals[0]), Reason: "sent more than once"}
	}
	d, ok, err := wire.ParseRequestMessageTimeout(vals[0])
	switch {
	case err != nil:
		return 0, err // a *wire.ParseError naming the header
	case !ok:
		return 0, &wire.ParseError{Header: wire.HeaderRequestMessageTimeout, Value: short(vals[0]), Reason: "empty"}
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
