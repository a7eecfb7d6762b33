package httpbudget

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
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
// Lingering sends the request from a goroutine of its own, which costs about
// 2 µs and 8 allocations on a loopback exchange of about 36 µs (BENCHMARKS.md), and
// holds a connection for at most d after an expiry. The default (zero) pays
// that only when it pays off. A Transport lingers, for [DefaultLinger],
// during the 10 s after one of its requests ran out of time in flight, and
// not otherwise, so the first expiry of a burst closes its connection and the
// rest keep theirs. When 8 lingering requests in a row got no answer within
// the linger and none had one in the last 10 s (a server that does not speak
// the budget and never answers), it stops, lingering for one request in 16
// only, until a late answer comes again: such a server would otherwise hold up to rate × linger connections
// more than net/http would. A positive d lingers for d on every request with
// a deadline; a negative d never lingers (net/http's behaviour).
//
// A request whose context is canceled, rather than past its deadline, is
// always aborted at once: its caller is gone for good and the server should
// stop too. Once the response's headers have come, its body is read under
// the caller's deadline.
func WithLinger(d time.Duration) ClientOption {
	return clientOption(func(c *clientConfig) { c.linger = d })
}

// processStart anchors the monotonic readings of lastExpiry.
var processStart = time.Now()

// futileLimit is how many lingering requests in a row may end with no
// answer, when none got one within lingerWindow, before the default
// lingering stops, keeping one request in probeEvery to see whether answers
// come again.
const (
	futileLimit = 8
	probeEvery  = 16
)

// lingerFor returns how long a request sent at now lingers, zero for not.
func (t *Transport) lingerFor(now time.Time) time.Duration {
	switch l := t.cfg.linger; {
	case l < 0:
		return 0
	case l > 0:
		return l
	}
	last := t.lastExpiry.Load()
	if last == 0 || now.Sub(processStart)-time.Duration(last) >= lingerWindow {
		return 0
	}
	if t.futile.Load() >= futileLimit && !t.paidWithin(now, lingerWindow) && t.probes.Add(1)%probeEvery != 0 {
		return 0
	}
	return DefaultLinger
}

// expiredInFlight records that a request ran out of time in flight, which
// turns the default lingering on for lingerWindow.
func (t *Transport) expiredInFlight() {
	t.lastExpiry.Store(int64(time.Since(processStart)) | 1) // never 0
}

// lingered records how a request that lingered ended: its late answer came
// (paid) or the linger ran out first.
func (t *Transport) lingered(paid bool) {
	if paid {
		t.paidAt.Store(int64(time.Since(processStart)) | 1)
		if t.futile.Load() != 0 {
			t.futile.Store(0)
		}
		return
	}
	t.futile.Add(1)
}

// paidWithin reports whether a lingering request got its late answer within
// d before now.
func (t *Transport) paidWithin(now time.Time, d time.Duration) bool {
	at := t.paidAt.Load()
	return at != 0 && now.Sub(processStart)-time.Duration(at) < d
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

	t     *Transport // told how a lingering request ended
	mu    sync.Mutex
	err   error
	funcs []func()    // AfterFunc callbacks, run on abort; nil once stopped
	slot  [1]func()   // the first callback's room
	timer *time.Timer // aborts at deadline once abandoned
	state atomic.Int32
	resp  *http.Response
	rtErr error
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
func newExchange(ctx context.Context, t *Transport, deadline time.Time, linger time.Duration) *exchange {
	x := &exchange{t: t, Context: ctx, deadline: deadline.Add(linger),
		done: make(chan struct{}), got: make(chan struct{}, 1)}
	x.funcs = x.slot[:0]
	return x
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
		if ctx.Err() != context.DeadlineExceeded {
			x.abort(ctx.Err()) // canceled: the caller is gone, abort
		}
		if x.state.CompareAndSwap(waiting, abandoned) {
			x.mu.Lock()
			if x.err == nil {
				x.timer = time.AfterFunc(time.Until(x.deadline), func() { x.abort(context.DeadlineExceeded) })
			}
			x.mu.Unlock()
			return nil, ctx.Err()
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
	if resp != nil && resp.Body != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}
	x.t.lingered(err == nil)
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
