package httpbudget

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// NewHandler returns a handler that applies an inbound deadline policy to
// every request before next sees it.
//
// The clock starts when ServeHTTP is entered, the earliest moment net/http
// shows a request, so time the request spent queued in the server counts.
// Then, according to the policy:
//
//   - a request whose deadline has passed, or that has less than the policy's
//     Min left, is refused: 504 Gateway Timeout, a Budget-Expired header
//     naming the stage, Budget-No-Retry: shed (refused on arrival: nothing
//     ran, and the caller should not retry), and a one-line body saying so.
//     next never runs.
//   - a request with a malformed deadline header under a Strict policy is
//     refused with 400 Bad Request and a body naming the header.
//   - otherwise next runs with a context carrying the request's budget and
//     its ledger. The budget's deadline is the caller's less the larger of
//     the policy's AnswerMargin and the answer margin ([edge.WithAnswerMargin]; by
//     default adaptive, 1 to 10 ms and at most 1/10 of the time left), so
//     that the handler stops, and its answer reaches the caller, before the
//     caller stops waiting.
//
// A budget that ran out never reads as success. When next returns after its
// budget ran out by its deadline and it sent nothing (no byte of body, no
// flush; a status it chose but never sent does not count), the caller gets
// the answer of a refusal: 504 with Budget-Expired, not net/http's empty
// 200 OK. When next had already sent its status, that cannot change: the
// response is left as next made it, with a Budget-Expired trailer (seen over
// HTTP/2 and chunked HTTP/1.1). A handler that stops mid-body should
// panic with [http.ErrAbortHandler] so that the caller sees the response
// cut short rather than a complete-looking one. To tell the two apart the
// handler sees a ResponseWriter that holds back its status line until the
// first byte of body, a flush or the handler's return, buffers no body, and
// keeps http.Flusher, http.Hijacker and [http.ResponseController] working;
// it costs one allocation per request.
//
// The attempt number a client sends in Request-Attempt is recorded on the
// arrival event. Requests for which the policy sets no deadline (nothing
// trusted was sent and there is no Default) run next unchanged. Skewed and
// malformed values are reported to the observer as [budget.EventSkew] and
// [budget.EventMalformed]. NewHandler panics if next is nil, as http.Handle
// does; nil options are ignored.
//
// With no options, NewHandler applies the zero [wire.Policy]: it trusts the
// deadline headers clients send ([wire.SourcesDefault]) with no cap, runs
// requests that send none without a deadline, and refuses only requests whose
// deadline has already passed. That is the policy of a service behind an edge
// it trusts. A public edge must not trust its clients: give it
// edge.WithPolicy(&wire.Policy{Trust: wire.SourcesNone, Max: ...}), under which no
// handler runs longer than Max whatever a request sent or omitted. With Max
// set, every admitted request runs with a deadline at most Max away. An
// invalid policy makes NewHandler panic at setup (see [edge.WithPolicy]).
func NewHandler(next http.Handler, opts ...edge.ServerOption) http.Handler {
	if next == nil {
		// As http.Handle does: a setup mistake, caught before any request.
		panic("httpbudget: NewHandler with a nil handler")
	}
	cfg := edge.Configure(handlerConfig{ServerSettings: edge.ServerSettings{Stage: "request"}}, opts)
	k, arrival := cfg.Start("httpbudget")
	arrival.Stage = cfg.Stage
	h := &handler{next: next, cfg: cfg, margin: k, arrival: arrival}
	h.stageValue = wire.FormatBudgetExpired(cfg.Stage)
	h.expiredText = (&budget.Error{Stage: cfg.Stage, Outcome: budget.OutcomeExpired}).Error()
	h.expiredLine = []byte(h.expiredText + "\n")
	h.shedText = (&budget.Error{Stage: cfg.Stage, Outcome: budget.OutcomeShed}).Error()
	h.lateText = "budget: " + cfg.Stage + " refused on arrival: the deadline had passed"
	return h
}

type handler struct {
	next    http.Handler
	cfg     handlerConfig
	margin  *edge.MarginKeeper
	arrival edge.Arrival
	// The texts of the handler's refusals, made once: a burst of failures
	// answers thousands of them at once.
	stageValue  string // Budget-Expired's value
	expiredText string // a handler that ran out of budget
	expiredLine []byte // expiredText as a plain-text body; only read
	shedText    string // too little time left on arrival
	lateText    string // the deadline had passed on arrival
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	ctx, cancel, dec, err := h.arrival.Arrive(r.Context(), h.cfg.Policy.Load(), h.request(r, now))
	if err != nil {
		h.refuse(w, r, dec, err)
		return
	}
	if cancel == nil {
		if ctx != r.Context() {
			r = r.WithContext(ctx) // no deadline, but a class
		}
		h.serve(r.Context(), w, r)
		return
	}
	defer cancel()
	aw := &answerWriter{ResponseWriter: w}
	if h.cfg.serverTiming {
		aw.ledger = budget.LedgerFrom(ctx)
	}
	h.serve(ctx, aw, r)
	h.finish(ctx, aw, r)
}

// finish completes the response after the handler returned. A handler whose
// budget ran out by its deadline and that sent nothing (neither a byte of
// body nor a flush; a status it only chose is not sent) gets the 504 a
// refusal gets: an empty 200 would read as success to its caller. When the
// handler had already sent its status, the middleware cannot change it; it
// adds a Budget-Expired trailer, which reaches callers over HTTP/2 and over
// HTTP/1.1 chunked responses, and otherwise leaves the response as it is.
func (h *handler) finish(ctx context.Context, aw *answerWriter, r *http.Request) {
	err := ctx.Err()
	if err == nil {
		aw.send()
		return
	}
	// Learn how late after the deadline the answer left, whether the
	// budget's timer ended the handler or the caller left first: on a
	// starved machine the caller's cancellation can run before the budget's
	// own timer, and that is the lateness most worth learning.
	deadline, _ := ctx.Deadline()
	defer func() {
		if late := time.Since(deadline); late > 0 {
			h.margin.Observe(late)
		}
	}()
	if !errors.Is(err, context.DeadlineExceeded) {
		aw.send()
		return
	}
	if aw.sent {
		aw.Header().Set(http.TrailerPrefix+wire.HeaderBudgetExpired, wire.FormatBudgetExpired(h.cfg.Stage))
		return
	}
	aw.sent = true
	h.answerLine(aw.ResponseWriter, r, http.StatusGatewayTimeout, h.expiredText, h.expiredLine)
}

// refuse answers a request the policy refused, without running the handler.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, dec wire.Decision, err error) {
	status, body := statusOf(err), ""
	switch dec.Reason {
	case wire.ReasonMalformed:
		body = err.Error()
	case wire.ReasonExpired:
		body = h.lateText
	default:
		body = h.shedText
	}
	if dec.Reason != wire.ReasonMalformed {
		stampShed(w)
	}
	h.answer(w, r, status, body)
}

// stampShed marks the answer to a request refused on arrival, before any
// work, with Budget-No-Retry: shed, which tells it from an expiry in the
// handler and asks the caller not to retry.
func stampShed(w http.ResponseWriter) {
	w.Header()[wire.HeaderBudgetNoRetry] = shedValue[:1:1]
}

// shedValue is the header value stampShed writes, shared so that a refusal
// does not allocate it; with its capacity at its length, a later Add copies.
var shedValue = []string{wire.NoRetryShed.String()}

// answer writes a refusal: status, a Budget-Expired header naming the stage
// for a 504, and body, as a Connect error for Connect unary requests.
func (h *handler) answer(w http.ResponseWriter, r *http.Request, status int, body string) {
	h.answerLine(w, r, status, body, nil)
}

// answerLine is answer with the plain-text body made already, line (body
// and a newline), when it is not nil.
func (h *handler) answerLine(w http.ResponseWriter, r *http.Request, status int, body string, line []byte) {
	if isConnectUnary(r) {
		// A Connect client reads the code from a JSON body; from a bare
		// status it would infer UNAVAILABLE, which retry policies retry.
		code := "deadline_exceeded"
		if status == http.StatusBadRequest {
			code = "invalid_argument"
		}
		h.refusalHeader(w.Header(), status, "application/json")
		w.WriteHeader(status)
		msg, _ := json.Marshal(body)
		_, _ = w.Write([]byte(`{"code":"` + code + `","message":` + string(msg) + "}"))
		return
	}
	if line == nil {
		line = []byte(body + "\n")
	}
	h.refusalHeader(w.Header(), status, "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(line)
}

// refusalHeader sets the headers of a refusal: its content type, nosniff,
// and for a 504 Budget-Expired naming the stage. The values share one
// allocation; each header's slice has a capacity of its own length, so an
// Add to one copies it rather than writing over the next.
func (h *handler) refusalHeader(hdr http.Header, status int, contentType string) {
	hdr.Del("Content-Length")
	v := make([]string, 3)
	v[0], v[1], v[2] = contentType, "nosniff", h.stageValue
	hdr["Content-Type"] = v[0:1:1]
	hdr["X-Content-Type-Options"] = v[1:2:2]
	if status == http.StatusGatewayTimeout {
		hdr[wire.HeaderBudgetExpired] = v[2:3:3]
	}
}

// isConnectUnary reports whether r is a Connect protocol unary request, whose
// errors are JSON bodies. Connect streaming and gRPC requests report errors
// in-band and are left to their own handlers.
func isConnectUnary(r *http.Request) bool {
	if r.Header.Get("Connect-Protocol-Version") == "" {
		return false
	}
	ct := r.Header.Get("Content-Type")
	return !strings.HasPrefix(ct, "application/connect+") && !strings.HasPrefix(ct, "application/grpc")
}

// StatusOf maps an error to the HTTP status a server should answer with: 504
// Gateway Timeout when the caller's budget is spent, wherever that was found
// out (an expiry, a refusal for lack of time here or upstream), 400 Bad
// Request for a malformed deadline header, 500 for anything else and 200 for
// nil. It is the one place this package maps errors to statuses.
//
// A [context.Canceled] that comes after ctx's deadline has passed is a 504
// too: when a deadline fires, the code that notices first cancels what it
// waits on, and the cause was the deadline. ctx is the request's context on
// a server, the caller's on a client. It takes the same arguments as
// grpcbudget's and connectbudget's CodeOf.
func StatusOf(ctx context.Context, err error) int {
	if status := statusOf(err); status != http.StatusInternalServerError || !errors.Is(err, context.Canceled) {
		return status
	}
	if edge.DeadlinePassed(ctx) {
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// statusOf is StatusOf for an error alone.
func statusOf(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, wire.ErrMalformed):
		return http.StatusBadRequest
	case edge.IsExpiry(err), errors.Is(err, ErrUpstreamExpired):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}
