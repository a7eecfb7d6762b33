package amqpbudget

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// Consumer hands messages to Handler with the budget their publisher gave
// them, and drops those whose budget ran out while they were queued (see the
// package documentation). Set the fields before first use and do not change
// them afterwards. The zero value with a Handler is ready to use. A Consumer
// is safe for concurrent use: several goroutines may call [Consumer.Handle],
// [Consumer.Run] or [Consumer.Consume] at once, and the counters are atomic.
type Consumer struct {
	// Handler processes one message within ctx's budget. Returning nil acks
	// the message; an error rejects it without requeueing, unless the
	// consumer is stopping (see [Consumer.Handle]).
	Handler func(ctx context.Context, d amqp.Delivery) error
	// Stage names the consumer in the ledger and in errors. Empty means
	// "amqp.consume".
	Stage string
	// Policy is the inbound rule for the budgets messages carry, the same
	// [wire.Policy] HTTP and gRPC servers apply: which headers to trust,
	// Max, Default, Min, AnswerMargin, Skew and the treatment of malformed
	// values; see the package documentation for how a message's wait in the
	// queue is charged. Nil means the zero Policy: trust the publisher's
	// headers with no cap and impose no deadline on messages that carry
	// none, which suits a queue only trusted services publish to. A queue
	// others can publish to wants Trust: [wire.SourcesNone] or at least Max.
	// An invalid policy makes Handle, Run and Consume return an error
	// matching [budget.ErrMisconfigured] and [wire.ErrInvalidPolicy].
	Policy *wire.Policy
	// Observer receives every message's budget events, and the skew,
	// malformed and refusal events of its arrival. Nil means none.
	Observer budget.Observer
	// DeadLetter rejects expired messages without requeueing instead of
	// acking them, so that the queue's dead-letter exchange, if it has one,
	// receives them with x-death reason "rejected".
	DeadLetter bool
	// OnExpired, when not nil, is called with each expired message before
	// it is dropped, with how long past its deadline it was (zero or
	// negative when it had less than the policy's Min left).
	OnExpired func(d amqp.Delivery, late time.Duration)

	handled, expired, failed, returned, refused, skewed, malformed atomic.Int64
}

// Stats are a Consumer's counters. Every message a Consumer receives is
// counted once in Handled, Expired, Returned or Refused, so that after a
// shutdown what was delivered equals their sum.
type Stats struct {
	// Handled counts messages the Handler finished: acked, or rejected for
	// its error.
	Handled int64
	// Expired counts messages dropped because their budget had run out (or
	// fell short of the policy's Min) before they were handled.
	Expired int64
	// Failed counts messages whose Handler returned an error and that were
	// rejected (included in Handled).
	Failed int64
	// Returned counts messages given back to the queue (Nack with requeue)
	// because the consumer was stopping: received after the stop, or whose
	// Handler returned an error once it had begun. The broker redelivers
	// them, to this consumer or another.
	Returned int64
	// Refused counts messages rejected without requeueing for a malformed
	// budget header under a Strict policy; the Handler did not see them.
	Refused int64
	// Skewed counts messages whose sending time or absolute deadline was
	// ignored because the clocks disagreed.
	Skewed int64
	// Malformed counts messages with at least one malformed value in a
	// trusted budget header, whether refused (Strict) or not.
	Malformed int64
}

// Stats returns the counters so far.
func (c *Consumer) Stats() Stats {
	return Stats{Handled: c.handled.Load(), Expired: c.expired.Load(), Failed: c.failed.Load(),
		Returned: c.returned.Load(), Refused: c.refused.Load(), Skewed: c.skewed.Load(), Malformed: c.malformed.Load()}
}

// ErrNoHandler is returned by Handle and Run when the Consumer has no
// Handler; it matches [budget.ErrMisconfigured]. The message is not acked.
var ErrNoHandler = errors.Join(budget.ErrMisconfigured, errors.New("amqpbudget: Consumer has no Handler"))

// zeroPolicy is the policy of a Consumer whose Policy is nil.
var zeroPolicy wire.Policy

func (c *Consumer) stage() string {
	if c.Stage == "" {
		return "amqp.consume"
	}
	return c.Stage
}

// check reports a Consumer that cannot handle messages.
func (c *Consumer) check() error {
	if c.Handler == nil {
		return ErrNoHandler
	}
	if err := c.Policy.Validate(); err != nil {
		return fmt.Errorf("amqpbudget: %w: %w", budget.ErrMisconfigured, err)
	}
	return nil
}

// Handle processes one delivery. When parent is already done (the consumer
// is stopping) it returns the message to the queue unhandled. Otherwise it
// decides the message's budget with the Policy: a message whose budget ran
// out in the queue, or that has less than Min left, is dropped (acked, or
// rejected for the dead-letter exchange with DeadLetter) and counted as
// expired; one with a malformed header under a Strict policy is rejected
// without requeueing. The rest run the Handler with a context derived from
// parent carrying the message's budget; the message is acked when it
// returns nil and rejected without requeueing when it returns an error,
// unless parent was done by then: an error during a shutdown may be the
// shutdown's doing, so the message goes back to the queue, never lost for
// it. Handle returns the Handler's error, or the error of the
// acknowledgement.
func (c *Consumer) Handle(parent context.Context, d amqp.Delivery) error {
	if err := c.check(); err != nil {
		return err
	}
	return c.handle(parent, d, c.giveBack)
}

// handle is Handle for a checked Consumer; back returns a message to the
// queue.
func (c *Consumer) handle(parent context.Context, d amqp.Delivery, back func(amqp.Delivery) error) error {
	if parent.Err() != nil {
		return back(d)
	}
	now := time.Now()
	p := c.Policy
	if p == nil {
		p = &zeroPolicy
	}
	h := headersOf(d.Headers)
	at := sent(d, h)
	a := edge.Arrival{Adapter: "amqpbudget", Stage: c.stage(), Observer: c.Observer}
	ctx, cancel, dec, err := a.Arrive(parent, p, edge.Request{Header: h, Now: now, Sent: at})
	if dec.Skew {
		c.skewed.Add(1)
	}
	if dec.Malformed > 0 {
		c.malformed.Add(1)
	}
	if err != nil {
		if dec.Reason == wire.ReasonMalformed {
			c.refused.Add(1)
			return errors.Join(err, d.Reject(false))
		}
		return c.drop(d, now, dec.CallerDeadline)
	}
	if cancel != nil {
		defer cancel()
		// Starting the budget took time; a message that ran out meanwhile
		// is dropped too, so no handler starts on a message whose deadline
		// passed. (The clock is read rather than ctx.Err, which turns only
		// when the context's timer has fired, a little after the deadline.)
		if t := time.Now(); !t.Before(dec.Deadline) {
			return c.drop(d, t, dec.CallerDeadline)
		}
		if !at.IsZero() && !dec.Skew {
			from := now.Add(at.Sub(now)) // on our monotonic clock
			budget.Note(ctx, budget.Event{Kind: budget.EventQueue, Stage: c.stage(), At: from,
				Duration: max(now.Sub(from), 0), Remaining: dec.CallerDeadline.Sub(from), Outcome: budget.OutcomeOK})
		}
	}
	herr := c.Handler(ctx, d)
	switch {
	case herr == nil:
		c.handled.Add(1)
		return d.Ack(false)
	case parent.Err() != nil:
		return errors.Join(herr, back(d))
	}
	c.handled.Add(1)
	c.failed.Add(1)
	return errors.Join(herr, d.Reject(false))
}

// giveBack returns a message to the queue because the consumer is stopping.
func (c *Consumer) giveBack(d amqp.Delivery) error {
	c.returned.Add(1)
	return d.Nack(false, true)
}

// drop counts an expired message and acks or rejects it.
func (c *Consumer) drop(d amqp.Delivery, now, deadline time.Time) error {
	c.expired.Add(1)
	if c.OnExpired != nil {
		c.OnExpired(d, now.Sub(deadline))
	}
	if c.DeadLetter {
		return d.Reject(false)
	}
	return d.Ack(false)
}
