package connectbudget

import (
	"context"
	"errors"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// NewServerInterceptor returns an interceptor that applies an inbound
// deadline policy to every call before its handler sees it, unary and
// streaming alike. Install it first (connect.WithInterceptors), so that the
// rest of the chain runs within the budget. It leaves calls a client makes
// unchanged; see [NewClientInterceptor] for those.
//
// connect-go has already turned the call's Connect-Timeout-Ms (Connect
// protocol) or grpc-timeout (gRPC and gRPC-Web) into the deadline of the
// handler's context, as the client sent it: no maximum, no default, no
// minimum. The interceptor adds the policy. It reads the request's headers,
// so that every trusted source counts (Connect-Timeout-Ms, grpc-timeout,
// Request-Timeout-Ms, Request-Deadline, ...) and the strictest wins; it
// then applies Max, Default, Min, AnswerMargin and the malformed-value rule
// ([wire.Policy.Decide]), and either
//
//   - refuses the call, without running the handler: DeadlineExceeded when
//     the deadline has passed or less than Min is left, InvalidArgument
//     naming the header for a malformed value under a Strict policy; or
//   - runs the handler with a context carrying the call's budget and ledger
//     ([budget.Config.StartUntil]), as one attempt of the procedure's op
//     when [edge.WithAdmission] gives it one; a call the op's measurements say
//     cannot finish is refused with DeadlineExceeded before the handler
//     runs.
//
// A budget is never extended past its parent, so the handler's deadline is
// never later than the one connect-go derived from the client's timeout,
// whatever the policy trusts: the client stops waiting then. With Max set,
// Max is a ceiling: the handler's deadline is at most Max after arrival
// whatever the client sent. Trust decides whether a header counts as a
// source (and so whether Default applies and Min is checked against it).
// A malformed Connect-Timeout-Ms or grpc-timeout never reaches the
// interceptor: connect-go rejects the call first.
//
// The handler's deadline is the caller's less the larger of the policy's
// AnswerMargin and the answer margin ([edge.WithAnswerMargin]), so that the handler
// stops, and its answer reaches the caller, before the caller stops
// waiting.
//
// Errors the handler returns without a Connect code are given one with
// [CodeOf]; a Canceled returned after the budget's deadline becomes
// DeadlineExceeded, and so does a nil error returned after the budget ran
// out: a budget that ran out never reads as success. Calls for which the
// policy sets no deadline run the handler with its context unchanged.
// Skewed and malformed values are reported to the observer as
// [budget.EventSkew] and [budget.EventMalformed], refusals as
// [budget.EventRefuse].
//
// The handler's context carries the call's class ([budget.CriticalityFrom]):
// a trusted Request-Criticality header's, the classifier's
// ([WithClassifier]), the one the context already had, or the policy's
// Criticality, in that order; admission reads it there.
//
// Streams also get the per-message budget of [WithMessageBudget] (read it
// with [MessageContext]) and the idle timeout of [WithIdleTimeout]; without
// them a stream runs under one deadline, the whole call's.
//
// A call refused on arrival (by the policy or the procedure's op; not a
// malformed value) is answered with the header "Budget-No-Retry: shed", and
// a call whose handler gave up after its own retries ([budget.GaveUp]) with
// "Budget-No-Retry: retried" ([wire.HeaderBudgetNoRetry]): this package's
// client reads either as a request not to retry ([budget.DoNotRetry]), so
// that retries happen at the hop nearest the failure.
//
// An invalid policy makes the constructor panic at setup (see
// [edge.WithPolicy]).
func NewServerInterceptor(opts ...edge.ServerOption) connect.Interceptor {
	cfg := edge.Configure(serverConfig{}, opts)
	k, a := cfg.Start("connectbudget")
	return &server{cfg: cfg, margin: k, arrival: a}
}

type server struct {
	cfg     serverConfig
	margin  *edge.MarginKeeper
	arrival edge.Arrival // Stage is set per call
}

func (s *server) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		procedure := req.Spec().Procedure
		bctx, cancel, _, err := s.arrive(ctx, procedure, req.Header())
		if err != nil {
			return nil, err
		}
		if cancel != nil {
			defer cancel()
		}
		var resp connect.AnyResponse
		ran := false
		err = edge.Run(bctx, s.op(procedure), func(ctx context.Context) error {
			var err error
			ran = true
			resp, err = next(ctx, req)
			return err
		})
		s.margin.Learn(bctx)
		if err != nil {
			if !ran { // the op refused it on arrival
				return resp, shedError(toConnect(bctx, err))
			}
			return resp, gaveUp(toConnect(bctx, err))
		}
		if err := s.finish(bctx, procedure); err != nil {
			return nil, err
		}
		return resp, nil
	}
}

// WrapStreamingClient returns next unchanged: this interceptor serves calls.
func (s *server) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (s *server) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		procedure := conn.Spec().Procedure
		bctx, cancel, p, err := s.arrive(ctx, procedure, conn.RequestHeader())
		if err != nil {
			return err
		}
		if cancel != nil {
			defer cancel()
		}
		var hc *handlerConn
		var messageOp *budget.Op
		if s.cfg.messageOps != nil {
			messageOp = s.cfg.messageOps(procedure)
		}
		perMessage, err := s.messageBudget(bctx, p, conn.RequestHeader())
		if err != nil {
			return err
		}
		if perMessage > 0 || s.cfg.idle > 0 || messageOp != nil {
			hc = newHandlerConn(bctx, conn, perMessage, s.cfg.idle, s.stage(procedure))
			hc.op = messageOp
			if cancel == nil {
				hc.observer = s.cfg.Observer // no budget to note the idle event in
			}
			conn = hc
			bctx = context.WithValue(hc.ctx, streamKey{}, hc)
			defer hc.end()
		}
		if op := s.op(procedure); op != nil {
			ran := false
			err = op.Do(bctx, func(ctx context.Context) error { ran = true; return next(ctx, conn) })
			if err != nil && !ran { // the op refused it on arrival
				return shedError(toConnect(bctx, err))
			}
		} else {
			err = next(bctx, conn)
		}
		s.margin.Learn(bctx)
		if hc != nil {
			// A stream whose peer went quiet ends as the idle timeout says,
			// whatever the handler made of the Receive error.
			if idle := hc.idleError(); idle != nil && !errors.Is(err, ErrIdle) {
				return connect.NewError(connect.CodeDeadlineExceeded, idle)
			}
		}
		if err == nil {
			return s.finish(bctx, procedure)
		}
		return gaveUp(toConnect(bctx, err))
	}
}

// finish checks a handler that returned a nil error. When its budget had
// run out by its deadline, the call is answered DeadlineExceeded: a reply
// made after the budget ran out is late by definition. For a stream, the
// messages already sent stay sent; the end of the stream, which comes last,
// says it was cut short. A call canceled by its caller is left alone.
func (s *server) finish(ctx context.Context, procedure string) error {
	if err := edge.Late(ctx, s.stage(procedure)); err != nil {
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	return nil
}

func (s *server) op(procedure string) *budget.Op { return edge.OpOf(s.cfg.Ops, procedure) }

func (s *server) stage(procedure string) string { return edge.Named(s.cfg.Stage, procedure) }

// arrive applies the policy to a call arriving with ctx and header. It
// returns the context the handler runs in and, when a budget was started,
// its cancel function, with the policy it applied (nil when enforcement is
// off); or the error refusing the call.
func (s *server) arrive(ctx context.Context, procedure string, header http.Header) (context.Context, context.CancelFunc, *wire.Policy, error) {
	now := time.Now()
	p := s.cfg.Policy.Load()
	if p == nil {
		return ctx, nil, nil, nil
	}
	stage := s.stage(procedure)
	a := s.arrival
	a.Stage = stage
	bctx, cancel, dec, err := a.Arrive(ctx, p, s.request(ctx, procedure, header, now))
	if err != nil {
		return nil, nil, p, refusal(stage, p.Min, dec, err)
	}
	return bctx, cancel, p, nil
}

// refusal is the error of a call the policy refused on arrival.
func refusal(stage string, min time.Duration, dec wire.Decision, err error) error {
	switch dec.Reason {
	case wire.ReasonMalformed:
		return connect.NewError(connect.CodeInvalidArgument, err)
	case wire.ReasonExpired:
		return shed(connect.NewError(connect.CodeDeadlineExceeded,
			&budget.Error{Stage: stage, Outcome: budget.OutcomeExpired, Remaining: dec.Remaining, Err: err}))
	default:
		return shed(connect.NewError(connect.CodeDeadlineExceeded,
			&budget.Error{Stage: stage, Outcome: budget.OutcomeShed, Remaining: dec.Remaining, Needed: min}))
	}
}
