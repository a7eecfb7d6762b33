package grpcbudget

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"io"
	"time"

	"github.com/timebudget/budget"
)

// MessageTimeoutKey is the metadata key under which a client sends its
// per-message budget ([WithMessageBudget]) to the server:
// "request-message-timeout-ms", which equals
// [wire.HeaderRequestMessageTimeout] in lower case, as gRPC metadata spells
// it, so that gRPC and Connect streams (connectbudget) ask for a per-message
// budget the same way. The value is whole milliseconds as 1 to 10 ASCII
// digits, not zero, as [wire.ParseRequestMessageTimeout] reads it. A server
// decides it as every adapter does ([edge.MessageBudget]): it reads it when
// its policy trusts [wire.SourceRequestTimeout] (the zero policy does; an
// edge trusting [wire.SourcesNone] does not), keeps a tenth of it back as
// its answer margin, takes the smaller of that and its own per-message
// budget, and clamps it to the policy's Max. A malformed value refuses the
// stream with INVALID_ARGUMENT under a strict policy, and is reported to the
// observer and ignored otherwise.
const MessageTimeoutKey = "request-message-timeout-ms"

// ErrMessageBudget is the cause ([context.Cause]) of a message's context
// ended by its per-message budget, and what a client stream's SendMsg or
// RecvMsg that waited longer than the per-message budget wraps. It matches
// [context.DeadlineExceeded], so code that treats any expiry alike needs no
// change; compare with it to tell a message's budget from the stream's.
var ErrMessageBudget error = messageBudgetError{}

type messageBudgetError struct{}

func (messageBudgetError) Error() string { return "grpcbudget: the message's budget ran out" }

func (messageBudgetError) Is(target error) bool { return target == context.DeadlineExceeded }

// ErrIdle is matched by the error that ends a stream whose peer sent nothing
// for the idle timeout ([WithIdleTimeout]). Such an error also matches
// [context.DeadlineExceeded] and carries DEADLINE_EXCEEDED; its message says
// which side went quiet ("client idle" on the server, "server idle" on the
// client).
var ErrIdle = errors.New("grpcbudget: stream idle")

// idleError is the error of a stream whose peer went quiet.
type idleError struct {
	side string // "client" or "server": the side that went quiet
	idle time.Duration
}

func (e *idleError) Error() string {
	return "grpcbudget: " + e.side + " idle: no message for " + e.idle.String()
}

func (e *idleError) Is(target error) bool {
	return target == ErrIdle || target == context.DeadlineExceeded
}

// stage is the ledger stage of an idle stream: the side that went quiet.
func (e *idleError) stage() string { return e.side + " idle" }

// MessageStage is the stage of the ledger entry recorded when a message's
// handling outlives its per-message budget in [EachMessage].
const MessageStage = "message"

// streamState is what the server interceptor tells a stream's handler about
// its messages. It is stored in the stream's context and never modified.
type streamState struct {
	message time.Duration // per-message budget; zero for none
	op      *budget.Op    // admits each message; nil for none
}

type streamKey struct{}

func streamStateOf(ctx context.Context) *streamState {
	st, _ := ctx.Value(streamKey{}).(*streamState)
	return st
}

// MessageContext returns the context in which to handle one message received
// on a server stream whose context is stream (the handler's
// stream.Context()): its deadline is the earlier of the stream's deadline
// and now plus the stream's per-message budget ([WithMessageBudget], or the
// smaller budget the client sent under [MessageTimeoutKey]). When the
// per-message budget ends it, [context.Cause] reports [ErrMessageBudget];
// when the stream's deadline does, the stream's cause. Without a per-message
// budget (or outside the server interceptor) the context ends only with the
// stream.
//
// Call it right after each Recv, so the message's time counts from its
// arrival. The message's context is independent of the stream: when it
// ends, the stream goes on, and the handler can answer the next message.
// [EachMessage] does all of this in a loop.
//
// Canceling the returned context releases resources associated with it, so
// code should call cancel as soon as the message is handled. It costs one
// clock read and the allocations of [context.WithDeadlineCause] (about
// three).
func MessageContext(stream context.Context) (context.Context, context.CancelFunc) {
	return messageContext(stream, streamStateOf(stream), time.Now())
}

// messageContext is MessageContext for a message that arrived at now on a
// stream whose state is st (nil for none).
func messageContext(stream context.Context, st *streamState, now time.Time) (context.Context, context.CancelFunc) {
	if st != nil && st.message > 0 {
		return context.WithDeadlineCause(stream, now.Add(st.message), ErrMessageBudget)
	}
	return context.WithCancel(stream)
}

// MessageStream is the receiving half of a server stream, as grpc-go's
// generated code gives it to a handler: grpc.BidiStreamingServer and
// grpc.ClientStreamingServer implement it.
type MessageStream[M any] interface {
	Recv() (*M, error)
	Context() context.Context
}

// EachMessage receives every message of stream and handles each in its own
// context ([MessageContext]): under the earlier of the stream's deadline and
// the per-message budget, counted from the message's arrival. It returns nil
// when the client has closed its side of the stream (io.EOF), the error of a
// failed Recv (an idle stream's among them, see [WithIdleTimeout]), or the
// first non-nil error handle returns, which ends the stream.
//
// A message that outlives its budget ends only itself: its context is done
// with [ErrMessageBudget] as its cause, the handler answers it as it sees fit
// (gRPC has no status per message, so the answer belongs in the reply) and
// returns nil, and the next message is handled under a fresh budget. Each
// such overrun is recorded in the stream's ledger as an attempt of stage
// [MessageStage] with [budget.OutcomeExpired].
//
// With [WithMessageOp], each message is handled as one attempt of the op,
// which learns the handling's latency and refuses a message its measurements
// say cannot be handled in the time left. handle still sees a refused
// message, with a context that is already done and whose [context.Cause] is
// the refusal (matching [budget.ErrInsufficient]), so one code path answers
// both a message that ran out of time and one that could not start.
//
// It costs, per message, what Recv allocates (the message) and what
// [MessageContext] allocates; see BENCHMARKS.md for a whole stream.
func EachMessage[M any](stream MessageStream[M], handle func(ctx context.Context, msg *M) error) error {
	if stream == nil || handle == nil {
		return errors.New("grpcbudget: EachMessage needs a stream and a handler")
	}
	ctx := stream.Context()
	st := streamStateOf(ctx)
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := handleMessage(ctx, st, msg, handle); err != nil {
			return err
		}
	}
}

func handleMessage[M any](ctx context.Context, st *streamState, msg *M, handle func(context.Context, *M) error) error {
	start := time.Now()
	mctx, cancel := messageContext(ctx, st, start)
	defer cancel()
	var err error
	if st != nil && st.op != nil {
		ran := false
		refusal := st.op.Do(mctx, func(actx context.Context) error {
			ran = true
			err = handle(actx, msg)
			return err
		})
		if !ran {
			rctx, rcancel := context.WithCancelCause(mctx)
			rcancel(refusal)
			err = handle(rctx, msg)
		}
	} else {
		err = handle(mctx, msg)
	}
	if context.Cause(mctx) == ErrMessageBudget {
		budget.Note(ctx, budget.Event{Kind: budget.EventAttempt, Stage: MessageStage, At: start,
			Duration: time.Since(start), Remaining: st.message, Outcome: budget.OutcomeExpired, Err: ErrMessageBudget})
	}
	return err
}

// WithMessageBudget sets the per-message budget of streams. The default is
// none: a stream's messages share the stream's deadline, as grpc-go alone
// allows.
//
// On the server, each message [EachMessage] (or a handler calling
// [MessageContext]) receives is handled under the earlier of the stream's
// deadline and d from the message's arrival, and a client's smaller budget
// sent under [MessageTimeoutKey] wins when the policy trusts it.
//
// On the client, d is sent under [MessageTimeoutKey], and SendMsg and
// RecvMsg each wait at most d, each on a timer of its own: a SendMsg held
// longer by flow control, or a RecvMsg that waits longer for an answer,
// ends the stream with DEADLINE_EXCEEDED and an error matching
// [ErrMessageBudget] (gRPC can cancel only a whole stream, so the stream
// ends with it). A RecvMsg's time counts only while the client awaits an
// answer: while a message it sent has not been answered (each message
// received answers one sent), or once it has called CloseSend. Time a
// RecvMsg waits while the client has asked nothing is the client's own
// pause, not the server's ([edge.ClientWatch] is the rule).
//
// How this differs from the stream's deadline: the stream's deadline
// (grpc-timeout, the policy's Max) bounds the whole stream, however many
// messages it carries, and its end ends the stream. The per-message budget
// bounds one message's handling, counted afresh from each arrival; on the
// server its end ends that message's context only. A long-lived stream thus
// needs no deadline of hours to bound each message by a second. A d of zero
// or less means none.
func WithMessageBudget(d time.Duration) edge.Option {
	return bothOption{
		Server: func(c *serverConfig) { c.stream.message = max(d, 0) },
		Client: func(c *clientConfig) { c.stream.message = max(d, 0) },
	}
}

// WithIdleTimeout ends a stream whose peer sends nothing for d while this
// side waits for it. The default is none.
//
// On the server, a RecvMsg that has waited d for the client's next message
// returns an error matching [ErrIdle] and [context.DeadlineExceeded], the
// handler's context is canceled with it as cause, and the stream ends with
// DEADLINE_EXCEEDED and the message "client idle", whatever the handler
// returns. On the client, a RecvMsg that has awaited the server's answer for
// d (counted as for [WithMessageBudget]: only while a message sent awaits
// its answer, or after CloseSend) ends the stream the same way, with
// "server idle". Either way a
// ledger entry of stage "client idle" or "server idle" (an attempt with
// [budget.OutcomeExpired], lasting the wait) records which side went quiet,
// in the stream's ledger when it has a budget and otherwise for the
// observer.
//
// Time this side spends between two RecvMsg calls does not count: the peer is
// idle only while it is waited for. On the server, a RecvMsg that waits also
// returns when the handler's budget ends (grpc-go's own RecvMsg returns only
// when the client's deadline does). The server watches with one goroutine per
// stream ([edge.IdleReceiver]); each message then costs two channel
// handoffs. A handler may return while a goroutine of its own is still in
// Recv. A d of zero or less means none.
func WithIdleTimeout(d time.Duration) edge.Option {
	return bothOption{
		Server: func(c *serverConfig) { c.stream.idle = max(d, 0) },
		Client: func(c *clientConfig) { c.stream.idle = max(d, 0) },
	}
}

// WithMessageOp makes each message [EachMessage] handles one attempt of op:
// the op measures the handling's latency and refuses a message that its
// measurements say cannot be handled in the time the message has left (see
// [EachMessage] for what the handler sees then). The default is none; a nil
// op is none.
func WithMessageOp(op *budget.Op) edge.ServerOption {
	return serverOption(func(c *serverConfig) { c.stream.op = op })
}

// streamConfig holds the stream options of either side.
type streamConfig struct {
	message time.Duration
	idle    time.Duration
	op      *budget.Op // server only
}

// noteIdle records an idle stream, found quiet after a wait of waited from
// start: in ctx's ledger when ctx carries a budget, and otherwise for obs
// alone.
func noteIdle(ctx context.Context, obs budget.Observer, e *idleError, start time.Time, waited time.Duration) {
	ev := budget.Event{Kind: budget.EventAttempt, Stage: e.stage(), At: start, Duration: waited,
		Outcome: budget.OutcomeExpired, Err: e}
	if r, ok := budget.Read(ctx); ok {
		ev.Remaining = r.Deadline.Sub(start)
		if r.Stage != "" {
			budget.Note(ctx, ev)
			return
		}
	}
	if obs != nil {
		obs.Observe(ctx, ev)
	}
}
