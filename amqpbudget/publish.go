package amqpbudget

import (
	"context"
	"errors"
	"maps"
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// Stamp writes ctx's budget into msg: the Request-Timeout-Ms and
// Request-Deadline headers, the timestamp (when msg has none) and the
// expiration, all from the time ctx has available ([budget.Available]). An
// expiration msg already has is kept when it is shorter. A class other than
// the default ([budget.CriticalityFrom]) is written as Request-Criticality,
// with or without a deadline, and so is the idempotency key of ctx
// ([budget.WithIdempotencyKey]) as the message id, when msg has none. When
// ctx has no deadline Stamp changes nothing else and returns nil. When less than a
// millisecond is left it changes nothing and returns the refusal (an error
// matching [budget.ErrInsufficient], or context.DeadlineExceeded once the
// deadline has passed), recorded in ctx's ledger as stage "amqp.publish":
// the message must not be sent. Stamp allocates the header strings and, when
// msg.Headers is nil, the table.
func Stamp(ctx context.Context, msg *amqp.Publishing) error {
	stampCriticality(ctx, msg)
	if k, ok := budget.IdempotencyKeyFrom(ctx); ok && msg.MessageId == "" {
		msg.MessageId = k
	}
	call, ok, err := edge.Send(ctx, "amqp.publish", edge.Outbound{KeepReserve: true})
	if !ok || err != nil {
		return err
	}
	var buf [24]byte
	timeout := string(call.AppendTimeout(buf[:0]))
	if msg.Headers == nil {
		msg.Headers = amqp.Table{}
	}
	msg.Headers[wire.HeaderRequestTimeout] = timeout
	if v, ok := call.AppendDeadline(buf[:0]); ok {
		msg.Headers[wire.HeaderRequestDeadline] = string(v)
	}
	if msg.Timestamp.IsZero() {
		msg.Timestamp = call.Reading.Now
	}
	if old, err := strconv.ParseInt(msg.Expiration, 10, 64); err != nil || old > call.Left.Milliseconds() {
		msg.Expiration = timeout // whole milliseconds, rounded down, never "0"
	}
	return nil
}

// Channel is the part of *amqp.Channel that [Publish] uses.
type Channel interface {
	PublishWithContext(ctx context.Context, exchange, key string, mandatory, immediate bool, msg amqp.Publishing) error
}

// Publish stamps msg with ctx's budget (see [Stamp]) and publishes it on ch,
// as amqp.Channel.PublishWithContext does. A message with less than a
// millisecond left is refused and not sent.
//
// The message carries the idempotency key of ctx ([budget.WithIdempotencyKey])
// as its message id when the caller set none, so that a consumer can drop a
// message it already handled, whichever attempt or hedge published it.
//
// Its error says how far the message got ([budget.SentOf]), so that
// [budget.Retry] does not publish twice a message that may have left:
// [budget.NotSent] for the refusal, for a context that was done before
// publishing, and for amqp.ErrClosed (the channel or connection was closed
// before the message was written, as amqp091's Channel reports it);
// [budget.MaybeExecuted] for any other error, since a frame may have been
// written. A publish without confirms gets no answer, so no error is
// [budget.Executed]; a publish that returned nil was written, not
// necessarily routed.
func Publish(ctx context.Context, ch Channel, exchange, key string, mandatory, immediate bool, msg amqp.Publishing) error {
	if msg.Headers != nil { // Stamp writes to the table: not to the caller's
		msg.Headers = maps.Clone(msg.Headers)
	}
	if err := Stamp(ctx, &msg); err != nil {
		return budget.MarkSent(err, budget.NotSent)
	}
	err := ch.PublishWithContext(ctx, exchange, key, mandatory, immediate, msg)
	if err == nil {
		return nil
	}
	if errors.Is(err, amqp.ErrClosed) || err == ctx.Err() {
		return budget.MarkSent(err, budget.NotSent)
	}
	return budget.MarkSent(err, budget.MaybeExecuted)
}
