package httpbudget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/internal/redact"
	"github.com/timebudget/budget/wire"
)

// ErrUpstreamExpired is matched by the error [Transport] returns when an
// upstream answered with a Budget-Expired header: it refused the request
// because the budget was spent. The budget is gone, not the server, so no
// layer should retry; the error also matches [context.DeadlineExceeded].
var ErrUpstreamExpired = errors.New("httpbudget: upstream refused: budget spent")

// ErrNoRetry is matched by the error [Transport] returns for a failed answer
// (status 400 or above) that carries Budget-No-Retry: the upstream shed the
// request on arrival, or already retried its own dependency and gave up, and
// asks its callers not to retry. The error is marked with
// [budget.DoNotRetry], so that [budget.Retry] returns it at once and a
// handler that answers it with [WriteError] passes the request on as one
// not to retry.
var ErrNoRetry = errors.New("httpbudget: upstream asked not to retry")

// Transport is an [http.RoundTripper] that sends the request's remaining
// budget with every request made through it.
//
// For a request whose context has a deadline, it
//
//   - refuses locally, without a network call, when less than the minimum
//     useful time is left (after the transit allowance): the error is a
//     [*budget.Error] matching [budget.ErrInsufficient]. It never sends 0
//     and never leaves the header out, as some clients do under 1 ms;
//   - otherwise sends a copy of the request (the caller's is never modified)
//     with Request-Timeout-Ms (whole milliseconds, rounded down) and
//     Request-Deadline, the attempt number of a [budget.Retry] loop as
//     Request-Attempt, plus Connect-Timeout-Ms and
//     x-envoy-upstream-rq-timeout-ms when configured;
//   - turns a response carrying Budget-Expired into an error matching
//     [ErrUpstreamExpired] and [context.DeadlineExceeded], marked
//     [budget.Permanent] so no retry loop retries it, closing its body;
//   - turns a failed response (status 400 or above) carrying
//     Budget-No-Retry into an error matching [ErrNoRetry] and marked with
//     [budget.DoNotRetry], closing its body: [budget.ServerRefused] for
//     "shed" (refused on arrival), [budget.Executed] for "retried" and for
//     a value it cannot read. [budget.Retry] does not retry it, and
//     [budget.GaveUp] reports true for it, so that a handler answering it
//     with [WriteError] passes the "do not retry" on to its own caller.
//
// With or without a deadline, it sends the idempotency key the request's
// context carries ([budget.WithIdempotencyKey]) as Idempotency-Key, unless
// the request has one of its own, so that every attempt and hedge of a call
// carries the same key. It classifies every error it returns with how far
// the request got ([budget.SentOf]), which [budget.Retry] reads so as not to
// repeat a request that may have run: [budget.NotSent] for a local refusal
// and for an error before any connection was obtained for the request (a
// refused dial, a DNS failure); [budget.MaybeExecuted] once a connection was
// obtained, and for any error it cannot place; [budget.Executed] for the
// errors made from answers, except an answer with Budget-No-Retry: shed,
// which tells a refusal on arrival from a handler that ran out of time:
// [budget.ServerRefused]. Its errors report Idempotent() true
// for requests idempotent by net/http's rule (GET, HEAD, OPTIONS, TRACE, or
// an Idempotency-Key header), which Retry retries whatever their
// classification; for other requests, telling whether a connection was
// obtained takes a [net/http/httptrace.ClientTrace]: four allocations more.
//
// It makes no retries of its own. Toward a host that has shown it honours
// the budget, after one of its requests ran out of time in flight or it
// refused one with Budget-Expired, it lingers for the late answers of the
// next ones, keeping their connections;
// toward any other host an expiry closes the connection, as net/http does,
// which is how a server that ignores the budget learns its caller left; see
// [WithLinger]. Requests without a deadline pass through
// unchanged. A Transport is safe for concurrent use.
//
// The zero Transport is ready to use, as http.Transport's is: it sends
// through [http.DefaultTransport] with the defaults [NewTransport] documents
// for its options (both headers, a minimum useful time of one millisecond, no
// transit allowance). A nil *Transport, or a nil request, is refused with an
// error matching [budget.ErrMisconfigured]; RoundTrip never panics.
//
// Clients built on top of an http.Client may re-map the error: connect-go, for
// one, reports any transport error that is not a context error as
// CodeUnavailable. A local refusal still matches [budget.ErrInsufficient]
// through their wrapping; check it before retrying.
type Transport struct {
	base http.RoundTripper
	cfg  clientConfig
	// hosts remembers, for a bounded number of hosts, whether lingering
	// toward them pays; see WithLinger.
	hosts hostTable
}

// NewTransport returns a Transport sending through base, or through
// [http.DefaultTransport] when base is nil. It takes the client options
// every adapter shares ([edge.WithTransit], [edge.WithMinUseful],
// [edge.WithClientStage], [edge.WithAdmission]) and this package's own;
// with [edge.WithAdmission], each request runs as one attempt of its stage's
// op, refused before it is sent when the op's measurements say it cannot
// finish in its time.
func NewTransport(base http.RoundTripper, opts ...edge.ClientOption) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	cfg := edge.ConfigureClient(clientConfig{ClientSettings: edge.ClientSettings{MinUseful: time.Millisecond}}, opts)
	return &Transport{base: base, cfg: cfg}
}

// RoundTrip implements [http.RoundTripper].
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t != nil && req != nil && t.cfg.Ops != nil {
		if op := t.cfg.Ops(t.stage(req)); op != nil {
			return t.admitted(op, req)
		}
	}
	return t.roundTrip(req)
}

func (t *Transport) roundTrip(req *http.Request) (*http.Response, error) {
	if t == nil || req == nil {
		if req != nil && req.Body != nil {
			_ = req.Body.Close() // as a RoundTripper must, even on error
		}
		return nil, errNilTransport(t == nil)
	}
	base := t.base
	if base == nil {
		base = http.DefaultTransport // the zero Transport
	}
	ctx := req.Context()
	call, ok, err := edge.Send(ctx, t.stage(req), edge.Outbound{Transit: t.cfg.Transit, MinUseful: t.cfg.MinUseful})
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, notSent(err, req)
	}
	if !ok {
		return passThrough(base, req)
	}
	deadline := call.Reading.Deadline
	var x *exchange
	if linger, host := t.lingerFor(call.Reading.Now, hostOf(req)); linger > 0 {
		x = newExchange(ctx, host, t.cfg.linger > 0, deadline, linger)
	}
	var out *http.Request
	if x != nil {
		out = req.WithContext(x)
	} else {
		out = new(http.Request)
		*out = *req
	}
	out.Header = make(http.Header, len(req.Header)+4)
	for k, v := range req.Header {
		out.Header[k] = v
	}
	var buf [24]byte
	out.Header[wire.HeaderRequestTimeout] = []string{string(call.AppendTimeout(buf[:0]))}
	if !t.cfg.noDeadline {
		if v, ok := call.AppendDeadline(buf[:0]); ok {
			out.Header[wire.HeaderRequestDeadline] = []string{string(v)}
		}
	}
	if v, ok := call.AppendAttempt(buf[:0]); ok {
		out.Header[wire.HeaderRequestAttempt] = []string{string(v)}
	}
	setCriticality(ctx, out.Header)
	setIdempotencyKey(ctx, out.Header)
	if t.cfg.connect {
		if v, ok := wire.FormatConnectTimeout(call.Left); ok {
			out.Header[wire.HeaderConnectTimeout] = []string{v}
		}
	}
	if t.cfg.envoy {
		if v, ok := wire.FormatEnvoyUpstreamTimeout(call.Left); ok {
			out.Header.Set(wire.HeaderEnvoyUpstreamTimeout, v)
		}
	}
	var resp *http.Response
	var st *sendTrace
	if x != nil {
		st = &x.sent // the exchange traces its request already
		resp, err = x.roundTrip(ctx, base, out)
	} else {
		out, st = traced(out)
		resp, err = base.RoundTrip(out)
	}
	err = classify(err, out, base, st, x != nil && err != nil && err == ctx.Err())
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		t.expiredInFlight(hostOf(req), time.Now())
	}
	if err != nil || resp == nil {
		return resp, err
	}
	if v := resp.Header.Get(wire.HeaderBudgetExpired); v != "" {
		stage, ok, _ := wire.ParseBudgetExpired(v)
		if !ok {
			stage = t.stage(req)
		}
		stage = redact.String(stage) // an upstream's value, shown in errors and pages
		t.honoured(hostOf(req), time.Now())
		discard(resp)
		err := budget.Permanent(executed(ErrUpstreamExpired, out))
		if s, ok := noRetrySent(resp); ok {
			err = budget.DoNotRetry(err, s)
		}
		return nil, &budget.Error{Stage: stage, Outcome: budget.OutcomeExpired, Remaining: time.Until(deadline), Err: err}
	}
	if s, ok := noRetrySent(resp); ok {
		discard(resp)
		return nil, budget.DoNotRetry(&noRetryAnswer{stage: t.stage(req), status: resp.StatusCode}, s)
	}
	return resp, nil
}

// discard drains a little of resp's body, so that its connection may be
// reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
}

// hostOf names the host whose lingering state a request reads and updates.
func hostOf(req *http.Request) string {
	if req.URL != nil {
		return req.URL.Host
	}
	return req.Host
}

func (t *Transport) stage(req *http.Request) string {
	if t.cfg.Stage != "" {
		return t.cfg.Stage
	}
	if req.URL != nil {
		return req.URL.Host
	}
	return "http"
}

// errNilTransport is the error of a RoundTrip on a nil *Transport (nilT) or
// with a nil request.
func errNilTransport(nilT bool) error {
	what := "a nil *http.Request"
	if nilT {
		what = "a nil *Transport"
	}
	return fmt.Errorf("httpbudget: RoundTrip on %s: %w", what, budget.ErrMisconfigured)
}
