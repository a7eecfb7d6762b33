package httpbudget

import (
	"context"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/timebudget/budget/wire"
)

// DefaultLinger is how long, by default, a [Transport] keeps waiting in the
// background for the answer to a request whose deadline passed; see
// [WithLinger].
const DefaultLinger = 250 * time.Millisecond

// lingerWindow is how long after a request of a Transport ran out of time
// in flight the Transport lingers by default.
const lingerWindow = 10 * time.Second

// WithLinger sets how long past the caller's deadline the [Transport] keeps
// waiting, in the background, for the answer to a request it already sent.
//
// The caller is not held up: RoundTrip returns the context's error at the
// deadline, as net/http does. What changes is the connection. net/http
// closes an HTTP/1.1 connection whose request is abandoned mid-flight (the
// protocol has no other way to abort it), so every expiry costs a
// connection, and the next request a new one: a dial, an accept, buffers and
// goroutines at both ends, at the worst moment, when a burst of requests
// expires together. A budget-aware server (a [NewHandler] with its answer
// margin) answers 504 before its caller's deadline, or a little after it
// under load; lingering reads that answer, discards it and returns the
// connection to the pool.
//
// But closing the connection is also the only way a server that ignores the
// budget headers (any third-party HTTP API) learns that its caller left, and
// a server that stops only then would work on for nobody while the request
// lingers. So the default (zero) lingers only toward a host that has shown
// it honours the budget: one that answered with a Budget-Expired header, or
// whose late answer came within the linger. Toward any other host an expiry
// closes the connection at once, as net/http does, except for one request
// in 10 s (doubling, up to 160 s, while such probes get no answer), which
// lingers to find out whether the host answers late; the first request sent
// to a host may be such a probe. Toward a trusted host, a Transport lingers
// for [DefaultLinger] during the 10 s after a request to it ran out of time
// in flight or it answered with Budget-Expired, and not otherwise: the
// requests of a burst of failures toward a budget-aware host keep their
// connections once the host has refused one request, while a request sent
// after 10 s without trouble costs no goroutine. A lingering request reads
// and discards a refusal's body itself, so that a deadline passing while the
// body arrives does not close the connection either. When 8 lingering
// requests in a row got no answer within the linger and none had one in the
// last 10 s, the host is no longer trusted.
//
// A positive d lingers for d toward every host, on every request with a
// deadline, with the same back-off: after 8 lingering requests in a row got
// no answer and none did in the last 10 s, only one request in 16 lingers
// until a late answer comes again. Either way, at most 64 requests linger
// toward one host at once (16,384 once it is trusted), so a server
// that never answers cannot hold rate × linger connections; a request past
// the cap closes its connection at its deadline. A negative d never lingers
// (net/http's behaviour). A Transport remembers up to 128 hosts; one it
// forgot is treated as one it never saw.
//
// A request still waiting for a connection when its caller's deadline passes
// (the pool's connections all held, or a dial under way) is aborted then, not
// sent late: there is no connection to keep yet, and its timeout header,
// stamped before the wait, would have the server work for a caller that has
// left. Whether it got one is known of net/http's Transport as base; through
// another RoundTripper such a request lingers like any other.
//
// Lingering sends the request from a goroutine of its own, which costs about
// 2 µs and 10 allocations on a loopback exchange of about 36 µs (BENCHMARKS.md).
// Choosing whether to linger looks the host up in a fixed table, without a
// lock or an allocation.
//
// A request whose context is canceled, rather than past its deadline, is
// always aborted at once: its caller is gone for good and the server should
// stop too. Once the response's headers have come, its body is read under
// the caller's deadline.
func WithLinger(d time.Duration) edge.ClientOption {
	return clientOption(func(c *clientConfig) { c.linger = d })
}

// processStart anchors the monotonic readings of the hosts' states.
var processStart = time.Now()

// futileLimit is how many lingering requests in a row may end with no
// answer, when none got one within lingerWindow, before lingering toward a
// host backs off: the default lingering withdraws the host's trust, a set
// linger keeps one request in probeEvery.
const (
	futileLimit = 8
	probeEvery  = 16
)

// lingerFor returns how long a request to host sent at now may linger,
// zero for not, and the host's state when it may. Whether it does linger is
// decided when its caller's deadline passes; see exchange.stay.
func (t *Transport) lingerFor(now time.Time, host string) (time.Duration, *hostState) {
	l := t.cfg.linger
	if l < 0 {
		return 0, nil
	}
	st := t.hosts.get(host)
	if l > 0 {
		if st == nil {
			st = t.hosts.add(host, now)
		}
		if st.backingOff(now) && st.probes.Add(1)%probeEvery != 0 {
			return 0, nil
		}
		return l, st
	}
	if st == nil {
		// The first request to a host may find out whether it answers late.
		return DefaultLinger, t.hosts.add(host, now)
	}
	if !within(st.expired.Load(), now, lingerWindow) {
		return 0, nil
	}
	if st.isTrusted(now) || st.probeDue(now) {
		return DefaultLinger, st
	}
	return 0, nil
}

// expiredInFlight records that a request to host ran out of time in flight,
// which turns the default lingering toward a trusted host on for
// lingerWindow.
func (t *Transport) expiredInFlight(host string, now time.Time) {
	if t.cfg.linger < 0 {
		return
	}
	st := t.hosts.get(host)
	if st == nil {
		st = t.hosts.add(host, now)
	}
	st.expired.Store(mono(now))
	st.heard.Store(mono(now))
}

// honoured records that host answered with a Budget-Expired header: it
// speaks the budget, so its late answers are worth waiting for, and budgets
// run out toward it, so the default lingering turns on for lingerWindow, as
// after an expiry in flight.
func (t *Transport) honoured(host string, now time.Time) {
	if t.cfg.linger < 0 {
		return
	}
	st := t.hosts.get(host)
	if st == nil {
		st = t.hosts.add(host, now)
	} else if st.isTrusted(now) && within(st.trusted.Load(), now, time.Second) {
		return // fresh: spare the store under a burst of refusals
	}
	st.trust(now)
	// Its budgets run out: the requests sent to it next linger, so that
	// the first of them to expire in flight keeps its connection too.
	st.expired.Store(mono(now))
}

// States of an exchange: who owns the answer.
const (
	waiting   int32 = iota // the caller waits for it
	answered               // it came in time: the caller's
	abandoned              // the caller left: the background drains it
)

// exchange is one request sent with lingering. It is the context the
// request travels under (the caller's values, a deadline linger past the
// caller's, and a Done channel closed when the exchange is aborted), and the
// meeting point of the caller and the goroutine running the round trip.
type exchange struct {
	context.Context // the caller's, for its values; Deadline, Done and Err are the exchange's own

	deadline time.Time // the caller's deadline plus the linger
	done     chan struct{}
	got      chan struct{} // the round trip returned and the answer is the caller's

	host  *hostState  // told how a lingering request ended
	set   bool        // the linger was set with WithLinger: no trust needed
	held  atomic.Bool // the request lingers past its caller's deadline
	probe atomic.Bool // ... as its host's probe
	mu    sync.Mutex
	err   error
	funcs []func()    // AfterFunc callbacks, run on abort; nil once stopped
	slot  [1]func()   // the first callback's room
	timer *time.Timer // aborts at deadline once abandoned
	state atomic.Int32
	resp  *http.Response
	rtErr error
	sent  sendTrace // whether base obtained a connection for the request
}

func (x *exchange) Deadline() (time.Time, bool) { return x.deadline, true }
func (x *exchange) Done() <-chan struct{}       { return x.done }

func (x *exchange) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}

// AfterFunc lets the context package (and so net/http) follow the exchange
// without a goroutine of its own; see context.AfterFunc. net/http registers
// one function per request, which takes the first slot without allocating.
func (x *exchange) AfterFunc(f func()) (stop func() bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err != nil {
		go f()
		return func() bool { return false }
	}
	x.funcs = append(x.funcs, f)
	i := len(x.funcs) - 1
	return func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		if i >= len(x.funcs) || x.funcs[i] == nil {
			return false
		}
		x.funcs[i] = nil
		return true
	}
}

// abort ends the exchange's context with err; the round trip then returns.
func (x *exchange) abort(err error) {
	x.mu.Lock()
	if x.err != nil {
		x.mu.Unlock()
		return
	}
	x.err = err
	close(x.done)
	funcs := x.funcs
	x.funcs = nil
	x.mu.Unlock()
	for _, f := range funcs {
		if f != nil {
			go f()
		}
	}
}

// newExchange returns the exchange of a request sent under ctx, whose
// deadline is deadline, lingering for linger after it.
func newExchange(ctx context.Context, host *hostState, set bool, deadline time.Time, linger time.Duration) *exchange {
	x := &exchange{host: host, set: set, Context: ctx, deadline: deadline.Add(linger),
		done: make(chan struct{}), got: make(chan struct{}, 1)}
	x.funcs = x.slot[:0]
	x.Context = x.sent.on(ctx)
	return x
}

// unsent reports whether, through base, the request has not yet obtained a
// connection: it waits for one (a dial, or a pooled connection that the
// exchanges before it still hold). Known only of net/http's Transport, whose
// trace hooks run for every request.
func (x *exchange) unsent(base http.RoundTripper) bool {
	return isNetHTTP(base) && !x.sent.gotConn.Load()
}

// stay decides, when the caller's deadline has passed, whether the request
// lingers: toward a host that honours the budget, or with a linger set by
// WithLinger, or as the host's probe; within the host's cap.
func (x *exchange) stay(now time.Time) bool {
	h := x.host
	probe := false
	if !x.set && !h.isTrusted(now) {
		if !h.takeProbe(now) {
			return false
		}
		probe = true
	}
	if !h.enter(now) {
		return false
	}
	x.probe.Store(probe)
	return true
}

// roundTrip sends out (a request on x's context) through base and returns
// at ctx's deadline if the answer has not come; an answer that comes within
// the linger after that is drained in the background and its connection
// kept.
func (x *exchange) roundTrip(ctx context.Context, base http.RoundTripper, out *http.Request) (*http.Response, error) {
	go x.run(base, out)
	select {
	case <-x.got:
	case <-ctx.Done():
		switch {
		case ctx.Err() != context.DeadlineExceeded:
			x.abort(ctx.Err()) // canceled: the caller is gone, abort
		case x.unsent(base):
			// No connection to keep, and a request sent now would carry
			// a timeout stamped before the wait: the server would work
			// for a caller that has left. Abort: net/http stops
			// waiting, and a connection that comes goes to the pool.
		default:
			x.held.Store(x.stay(time.Now()))
		}
		if x.state.CompareAndSwap(waiting, abandoned) {
			if !x.held.Load() {
				// Closing the connection is how the server learns
				// that its caller left.
				x.abort(ctx.Err())
				return nil, ctx.Err()
			}
			x.mu.Lock()
			if x.err == nil {
				x.timer = time.AfterFunc(time.Until(x.deadline), func() { x.abort(context.DeadlineExceeded) })
			}
			x.mu.Unlock()
			return nil, ctx.Err()
		}
		if x.held.Load() {
			x.host.lingering.Add(-1) // it did not linger after all
		}
		<-x.got // answered at the same moment: take it
	}
	if x.rtErr != nil || x.resp == nil {
		x.abort(context.Canceled)
		return x.resp, x.rtErr
	}
	if rwc, ok := x.resp.Body.(io.ReadWriteCloser); ok {
		// A 101 Switching Protocols body is the connection itself, which
		// callers (WebSocket clients) use as an io.ReadWriteCloser.
		x.resp.Body = &lingerConn{lingerBody{ReadCloser: rwc, x: x}, rwc}
	} else {
		x.resp.Body = &lingerBody{ReadCloser: x.resp.Body, x: x}
	}
	return x.resp, nil
}

// run makes the round trip and hands the answer to the caller, or, when
// the caller has left, reads it so that the connection is kept.
func (x *exchange) run(base http.RoundTripper, out *http.Request) {
	resp, err := base.RoundTrip(out)
	if err == nil && resp != nil && resp.Body != nil && resp.Header.Get(wire.HeaderBudgetExpired) != "" {
		// A refusal, whose body the Transport discards. Discarding it
		// here, before the caller has the answer, keeps the connection
		// when the caller's deadline passes meanwhile, as it does for a
		// burst of refusals that land at their callers' deadlines: the
		// caller then leaves, and this goroutine lingers.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		_ = resp.Body.Close()
		resp.Body = http.NoBody
	}
	if x.state.CompareAndSwap(waiting, answered) {
		x.resp, x.rtErr = resp, err
		x.got <- struct{}{}
		if err != nil || resp == nil {
			return
		}
		// The body is read under the caller's deadline: once the headers
		// are here, the caller decides how long to read. Closing the body
		// ends the exchange.
		select {
		case <-x.Context.Done():
			x.abort(x.Context.Err())
		case <-x.done:
		}
		return
	}
	// Told before the connection goes back to the pool, so that the next
	// request on it already knows the host answered.
	if x.held.Load() {
		x.host.leave(time.Now(), err == nil, x.probe.Load())
	}
	if resp != nil && resp.Body != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}
	x.mu.Lock()
	if x.timer != nil {
		x.timer.Stop()
	}
	x.mu.Unlock()
	x.abort(context.Canceled)
}

// lingerBody releases the exchange when the body is closed.
type lingerBody struct {
	io.ReadCloser
	x *exchange
}

func (b *lingerBody) Close() error {
	err := b.ReadCloser.Close()
	b.x.abort(context.Canceled)
	return err
}

// lingerConn is the lingerBody of a body that can also be written to.
type lingerConn struct {
	lingerBody
	w io.Writer
}

func (c *lingerConn) Write(p []byte) (int, error) { return c.w.Write(p) }
