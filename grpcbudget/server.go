package grpcbudget

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// UnaryServerInterceptor returns an interceptor that applies an inbound
// deadline policy to every unary call before its handler sees it. Install it
// first in the chain (grpc.ChainUnaryInterceptor), so that the rest of the
// chain runs within the budget.
//
// grpc-go has already turned the call's grpc-timeout into the deadline of the
// handler's context, and enforces it as it is: no maximum, no default, no
// minimum (grpc/grpc-go#6844). The interceptor adds the policy. It reads the
// incoming metadata and, when the policy trusts grpc-timeout, the deadline
// grpc-go derived from it, so that every trusted source counts
// (grpc-timeout, Request-Timeout-Ms, Request-Deadline, ...) and the strictest
// wins; it then applies Max, Default, Min, AnswerMargin and the malformed-value
// rule ([wire.Policy.Decide]), and either
//
//   - refuses the call, without running the handler: DEADLINE_EXCEEDED when
//     the deadline has passed or less than Min is left, INVALID_ARGUMENT
//     naming the header for a malformed value under a Strict policy; or
//   - runs the handler with a context carrying the call's budget and ledger
//     ([budget.Config.StartUntil]), as one attempt of the method's op when
//     [edge.WithAdmission] gives it one; a call the op's measurements say cannot
//     finish is refused with DEADLINE_EXCEEDED before the handler runs.
//
// A budget is never extended past its parent, so the handler's deadline is
// never later than the client's own grpc-timeout, whatever the policy trusts:
// the client stops waiting then. Trust decides whether grpc-timeout counts
// as a source (and so whether Default applies and Min is checked against it).
// A malformed grpc-timeout never reaches the interceptor: grpc-go rejects the
// call with INTERNAL first.
//
// The handler's deadline is the caller's less the larger of the policy's
// AnswerMargin and the answer margin ([edge.WithAnswerMargin]; by default adaptive, 1
// to 10 ms and at most 1/10 of the time left), so that the handler stops,
// and its status reaches the caller, before the caller stops waiting.
//
// Errors the handler returns without a gRPC status are given one with
// [CodeOf]; a CANCELLED returned after the budget's deadline becomes
// DEADLINE_EXCEEDED, and so does a nil error returned after the budget ran
// out: a budget that ran out never reads as OK. Calls for which the policy
// sets no deadline run the handler with its context unchanged. The attempt number a client sends as
// request-attempt metadata is recorded on the arrival event. Skewed and malformed values are
// reported to the observer as [budget.EventSkew] and [budget.EventMalformed],
// refusals as [budget.EventRefuse] with [budget.OutcomeShed] or
// [budget.OutcomeExpired]. A call refused on arrival (by the policy or the
// method's op; not a malformed value) is answered with the trailer
// "budget-no-retry: shed", and a call whose handler gave up after its own
// retries ([budget.GaveUp]) with "budget-no-retry: retried"
// ([wire.HeaderBudgetNoRetry]): this package's client reads either as a
// request not to retry ([budget.DoNotRetry]), so that retries happen at the
// hop nearest the failure.
//
// With no options, the interceptor applies the zero [wire.Policy]: it trusts
// grpc-timeout and the other default sources with no cap, runs calls that
// carry no deadline without one, and refuses only calls whose deadline has
// already passed; that is the policy of a service behind an edge it trusts.
// With Max set, Max is a ceiling: the handler's deadline is at most Max after
// arrival whatever the client sent, trusted or not, or omitted, even though
// grpc-go has already put the client's grpc-timeout on the context. When the
// policy does not trust grpc-timeout, that deadline is not taken as the
// budget either: the handler's deadline is the earlier of the policy's and
// the context's. An invalid policy makes the constructor panic at setup (see
// [edge.WithPolicy]).
func UnaryServerInterceptor(opts ...edge.ServerOption) grpc.UnaryServerInterceptor {
	s := newServer(opts)
	return s.unary
}

// StreamServerInterceptor returns the streaming counterpart of
// [UnaryServerInterceptor], with the same policy, refusals and admission. The
// handler's stream reports the budget's context from its Context method.
func StreamServerInterceptor(opts ...edge.ServerOption) grpc.StreamServerInterceptor {
	s := newServer(opts)
	return s.stream
}

type server struct {
	cfg     serverConfig
	margin  *edge.MarginKeeper
	arrival edge.Arrival // Stage is set per call
}

func newServer(opts []edge.ServerOption) *server {
	cfg := edge.Configure(serverConfig{}, opts)
	k, a := cfg.Start("grpcbudget")
	return &server{cfg: cfg, margin: k, arrival: a}
}

func (s *server) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	bctx, cancel, err := s.arrive(ctx, info.FullMethod)
	if err != nil {
		return nil, refused(ctx, nil, err)
	}
	if cancel != nil {
		defer cancel()
	}
	var resp any
	ran := false
	err = edge.Run(bctx, s.op(info.FullMethod), func(ctx context.Context) error {
		var err error
		ran = true
		resp, err = handler(ctx, req)
		return err
	})
	s.margin.Learn(bctx)
	if err != nil {
		if !ran {
			return resp, refused(ctx, nil, toStatus(bctx, err))
		}
		return resp, gaveUp(ctx, nil, toStatus(bctx, err))
	}
	if err := s.finish(bctx, info.FullMethod); err != nil {
		return nil, err
	}
	return resp, nil
}

func (s *server) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	method := info.FullMethod
	if srv == nil {
		// The server registered no such method: its UnknownServiceHandler
		// runs, and the name came from the client, not from code.
		method = UnknownMethodStage
	}
	bctx, cancel, err := s.arrive(ss.Context(), method)
	if err != nil {
		return refused(ss.Context(), ss, err)
	}
	if cancel != nil {
		defer cancel()
	}
	ss, bctx, idle, err := s.streamLimits(ss, bctx)
	if err != nil {
		return err
	}
	if op := s.op(info.FullMethod); op != nil {
		ran := false
		err = op.Do(bctx, func(ctx context.Context) error {
			ran = true
			return handler(srv, &serverStream{ServerStream: ss, ctx: ctx})
		})
		if err != nil && !ran {
			return refused(ss.Context(), ss, toStatus(bctx, err))
		}
	} else if bctx != ss.Context() {
		err = handler(srv, &serverStream{ServerStream: ss, ctx: bctx})
	} else {
		err = handler(srv, ss)
	}
	if idle != nil {
		err = idle.end(err)
	}
	s.margin.Learn(bctx)
	if err == nil {
		return s.finish(bctx, method)
	}
	return gaveUp(ss.Context(), ss, toStatus(bctx, err))
}

// finish checks a handler that returned a nil error. When its budget had run
// out by its deadline, the call is answered DEADLINE_EXCEEDED: a reply made
// after the budget ran out is late by definition, and an OK would tell the
// caller it succeeded. For a stream, the messages already sent stay sent; the
// status, which comes last, says the stream was cut short. A call canceled by
// its caller is left alone.
func (s *server) finish(ctx context.Context, method string) error {
	if err := edge.Late(ctx, s.stage(method)); err != nil {
		return &codedError{code: codes.DeadlineExceeded, err: err}
	}
	return nil
}

func (s *server) op(method string) *budget.Op { return edge.OpOf(s.cfg.Ops, method) }

func (s *server) stage(method string) string { return edge.Named(s.cfg.Stage, method) }

// arrive applies the policy to a call arriving with ctx. It returns the
// context the handler runs in and, when a budget was started, its cancel
// function; or the error refusing the call.
func (s *server) arrive(ctx context.Context, method string) (context.Context, context.CancelFunc, error) {
	now := time.Now()
	p := s.cfg.Policy.Load()
	if p == nil {
		return ctx, nil, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if dl, ok := ctx.Deadline(); ok && p.Trusts(wire.SourceGRPCTimeout) {
		// grpc-go consumed grpc-timeout; carry its deadline over so that it
		// competes with the other sources. md is our own copy.
		v, ok := wire.FormatGRPCTimeout(dl.Sub(now))
		if !ok {
			v = "0n"
		}
		if md == nil {
			md = make(metadata.MD, 1)
		}
		md[grpcTimeoutKey] = []string{v}
	}
	stage := s.stage(method)
	a := s.arrival
	a.Stage = stage
	bctx, cancel, dec, err := a.Arrive(ctx, p, s.request(ctx, method, md, now))
	if err != nil {
		return nil, nil, refusal(stage, p.Min, dec, err)
	}
	return bctx, cancel, nil
}

const grpcTimeoutKey = "grpc-timeout"

// refusal is the error of a call the policy refused on arrival.
func refusal(stage string, min time.Duration, dec wire.Decision, err error) error {
	switch dec.Reason {
	case wire.ReasonMalformed:
		return &codedError{code: codes.InvalidArgument, err: err}
	case wire.ReasonExpired:
		return &codedError{code: codes.DeadlineExceeded,
			err: &budget.Error{Stage: stage, Outcome: budget.OutcomeExpired, Remaining: dec.Remaining, Err: err}}
	default:
		return &codedError{code: codes.DeadlineExceeded,
			err: &budget.Error{Stage: stage, Outcome: budget.OutcomeShed, Remaining: dec.Remaining, Needed: min}}
	}
}

// serverStream reports the budget's context to the handler.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *serverStream) Context() context.Context { return s.ctx }
