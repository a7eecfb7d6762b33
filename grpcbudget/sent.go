package grpcbudget

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// How the client interceptors classify the errors they return
// ([budget.SentOf]), so that [budget.Retry] and [budget.Hedge] do not repeat
// a call that may have run:
//
//   - a refusal of the interceptor's own (too little time left, an op's
//     admission), and a unary call for which grpc-go never created a
//     transport stream (no connection was ready: UNAVAILABLE from a failed
//     dial or a connection in TRANSIENT_FAILURE, or the deadline while
//     waiting for one), is [budget.NotSent]; so is a stream that grpc-go
//     failed to open;
//   - an answer carrying the budget-no-retry trailer is [budget.DoNotRetry]'s
//     error: [budget.ServerRefused] for "shed" (a server's interceptor
//     refused the call on arrival), [budget.Executed] for "retried" or any
//     other value;
//   - a status the server sent is [budget.Executed]: a trailers-only answer
//     (the usual shape of an error returned before any message), trailers
//     with metadata, or any code other than UNAVAILABLE, INTERNAL,
//     CANCELLED, DEADLINE_EXCEEDED and UNKNOWN, which only a peer sends;
//   - anything else once a transport stream existed (the deadline, a reset
//     or closed connection, one of the five codes above after the server's
//     headers and before its trailers) is [budget.MaybeExecuted]: the
//     interceptor never calls "not sent" what may have run.
//
// What it cannot tell: grpc-go creates the transport stream before it
// writes the request, and a connection that fails between the two reads as
// MaybeExecuted (grpc-go itself retries such a call transparently when the
// server reports it unprocessed, so the error seldom reaches the
// interceptor). Headers followed by a lost connection, and headers followed
// by trailers without metadata whose status is one of the five codes above,
// look alike: both are MaybeExecuted. With grpc-go's own retry policy
// (a service config's retryPolicy) the classification is that of grpc-go's
// last attempt; an earlier one may have run: leave retries to one layer.
//
// Knowing whether a transport stream existed and reading the trailer takes
// two call options (grpc.Peer and grpc.Trailer) filling one block: one
// allocation per attempt. The block is not pooled, since an interceptor
// further down the chain may keep the options past the call's return.

// sentError is an error the client interceptors return, classified. Unlike
// [budget.MarkSent]'s, it forwards the status of the error it wraps, so that
// status.Convert reports the same code and message as without it.
type sentError struct {
	err  error
	sent budget.Sent
}

func (e *sentError) Error() string     { return e.err.Error() }
func (e *sentError) Unwrap() error     { return e.err }
func (e *sentError) Sent() budget.Sent { return e.sent }

// GRPCStatus returns the status of the first error in the chain that has
// one, code and message unchanged; UNKNOWN with the error's message when
// none has.
func (e *sentError) GRPCStatus() *status.Status {
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(e.err, &gs) {
		return gs.GRPCStatus()
	}
	return status.New(codes.Unknown, e.err.Error())
}

// markSent returns err classified as s; nil for a nil err.
func markSent(err error, s budget.Sent) error {
	if err == nil {
		return nil
	}
	return &sentError{err: err, sent: s}
}

// noRetryKey is [wire.HeaderBudgetNoRetry] as gRPC metadata spells it: the
// marker by which a server asks its caller not to retry.
const noRetryKey = "budget-no-retry"

// The trailers of a call refused on arrival and of a call whose handler
// gave up ([budget.GaveUp]). grpc-go copies the trailers it is given, so one
// value serves every call.
var (
	shedTrailer    = metadata.Pairs(noRetryKey, wire.NoRetryShed.String())
	retriedTrailer = metadata.Pairs(noRetryKey, wire.NoRetryRetried.String())
)

// attemptInfo collects what grpc-go reports about one unary attempt through
// call options: the peer, set only when a transport stream was created, and
// the trailer.
type attemptInfo struct {
	peer    peer.Peer
	trailer metadata.MD
	opts    [8]grpc.CallOption
}

// options returns opts followed by the options that fill a.
func (a *attemptInfo) options(opts []grpc.CallOption) []grpc.CallOption {
	return append(append(a.opts[:0], opts...), grpc.Peer(&a.peer), grpc.Trailer(&a.trailer))
}

// classify returns err, the error of a unary attempt, marked with how far it
// got.
func (a *attemptInfo) classify(err error) error {
	if err == nil {
		return nil
	}
	if a.peer.Addr == nil && a.peer.LocalAddr == nil && len(a.trailer) == 0 {
		return markSent(err, budget.NotSent)
	}
	return answered(err, a.trailer)
}

// answered returns err, the error of a call that had a transport stream,
// marked with how far it got, from the error and the trailer the server
// sent. A trailer with the no-retry marker makes it [budget.DoNotRetry]:
// ServerRefused for "shed", Executed for "retried" or a value this package
// does not know (the marker's presence is what asks for no retry).
func answered(err error, trailer metadata.MD) error {
	if v := trailer[noRetryKey]; len(v) > 0 {
		s := budget.Executed
		if r, _, _ := wire.ParseBudgetNoRetry(v); r == wire.NoRetryShed {
			s = budget.ServerRefused
		}
		return markSent(budget.DoNotRetry(err, s), s)
	}
	return markSent(err, sentOf(err, trailer))
}

// sentOf says how far a call that had a transport stream and no no-retry
// marker got, from its error and the trailer the server sent.
func sentOf(err error, trailer metadata.MD) budget.Sent {
	if len(trailer) > 0 {
		return budget.Executed
	}
	code, ok := statusCode(err)
	if !ok {
		return budget.MaybeExecuted
	}
	switch code {
	case codes.Unavailable, codes.Internal, codes.Canceled, codes.DeadlineExceeded, codes.Unknown:
		return budget.MaybeExecuted
	}
	return budget.Executed
}

// sendIdempotencyKey adds the idempotency key ctx carries
// ([budget.WithIdempotencyKey]) to the outgoing metadata as
// [IdempotencyKeyKey], unless the caller set one of its own.
func sendIdempotencyKey(ctx context.Context) context.Context {
	k, ok := budget.IdempotencyKeyFrom(ctx)
	if !ok {
		return ctx
	}
	if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md[IdempotencyKeyKey]) > 0 {
		return ctx
	}
	v, ok := wire.FormatIdempotencyKey(k)
	if !ok {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, IdempotencyKeyKey, v)
}

// IdempotencyKeyKey is the metadata key under which the client interceptors
// send the idempotency key of a call's context ([budget.WithIdempotencyKey])
// with every attempt and hedge: "idempotency-key", [wire.HeaderIdempotencyKey]
// in lower case as gRPC metadata spells it, with the value quoted as
// [wire.FormatIdempotencyKey] writes it. A key the caller put in the
// outgoing metadata itself is left as it is. A server reads it with
// [wire.ParseIdempotencyKey].
const IdempotencyKeyKey = "idempotency-key"

// refused returns err, the error refusing a call on arrival, after adding
// the "budget-no-retry: shed" trailer to the call (through ss for a stream,
// ctx for a unary call), so that a client does not retry it: a refusal on
// arrival means the server is short of time or capacity, and a retry from
// the caller's side would spend the caller's budget on the same answer. A
// malformed value (INVALID_ARGUMENT) is a fault of the request, not a
// refusal, and gets no trailer.
func refused(ctx context.Context, ss grpc.ServerStream, err error) error {
	if codeOf(err) == codes.InvalidArgument {
		return err
	}
	if ss != nil {
		ss.SetTrailer(shedTrailer)
	} else if ctx != nil && grpc.ServerTransportStreamFromContext(ctx) != nil {
		_ = grpc.SetTrailer(ctx, shedTrailer)
	}
	return err
}

// gaveUp returns err, the error of a handler, after adding the
// "budget-no-retry: retried" trailer to the call when err says the handler
// gave up after its own retries ([budget.GaveUp]), so that the caller does
// not retry in turn: retries happen at the hop nearest the failure.
func gaveUp(ctx context.Context, ss grpc.ServerStream, err error) error {
	if !budget.GaveUp(err) {
		return err
	}
	if ss != nil {
		ss.SetTrailer(retriedTrailer)
	} else if grpc.ServerTransportStreamFromContext(ctx) != nil {
		_ = grpc.SetTrailer(ctx, retriedTrailer)
	}
	return err
}
