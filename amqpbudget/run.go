package amqpbudget

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Run handles deliveries one at a time until the channel is closed (it then
// returns nil) or ctx is done (it returns ctx's error). Start several Runs on
// the same channel for concurrency, with a prefetch (Channel.Qos) to match.
// Errors of single messages are counted, not returned.
//
// Stopping is graceful: once ctx is done, no message is handed to the
// Handler; the message in flight gets ctx's cancellation, and goes back to
// the queue unless its Handler still finishes it with nil; messages received
// after the stop, and those waiting in deliveries when Run stops, go back to
// the queue too (see [Stats.Returned]), none rejected for the shutdown. What
// the client library has prefetched but not yet put on deliveries stays
// unacknowledged until the consumer is cancelled or its channel closed,
// when the broker requeues it uncounted; [Consumer.Consume] cancels the
// consumer itself and returns every prefetched message, counted.
func (c *Consumer) Run(ctx context.Context, deliveries <-chan amqp.Delivery) error {
	if err := c.check(); err != nil {
		return err
	}
	var held returns
	if !c.loop(ctx, deliveries, &held) {
		for ready := true; ready; { // what is on deliveries already
			select {
			case d, ok := <-deliveries:
				if ready = ok; ok {
					held.hold(d)
				}
			default:
				ready = false
			}
		}
	}
	held.giveBack(c)
	return ctx.Err()
}

// loop handles deliveries until the channel closes (it reports true) or ctx
// is done. Messages to return to the queue meanwhile are held, not
// returned: the broker would send a returned message straight back to the
// consumer, which would return it again.
func (c *Consumer) loop(ctx context.Context, deliveries <-chan amqp.Delivery, held *returns) bool {
	for ctx.Err() == nil { // checked first: after the stop, nothing is handled
		select {
		case <-ctx.Done():
		case d, ok := <-deliveries:
			if !ok {
				return true
			}
			_ = c.handle(ctx, d, held.hold) // held if ctx is done by now
		}
	}
	return false
}

// returns are messages to give back to the queue once the consumer stops.
type returns []amqp.Delivery

func (r *returns) hold(d amqp.Delivery) error {
	*r = append(*r, d)
	return nil
}

// giveBack returns the held messages to the queue.
func (r returns) giveBack(c *Consumer) {
	for _, d := range r {
		_ = c.giveBack(d)
	}
}

// Queue is the part of *amqp.Channel that [Consumer.Consume] uses.
type Queue interface {
	Consume(queue, consumer string, autoAck, exclusive, noLocal, noWait bool, args amqp.Table) (<-chan amqp.Delivery, error)
	Cancel(consumer string, noWait bool) error
}

// consumerSeq numbers the consumers Consume registers.
var consumerSeq atomic.Uint64

// Consume registers a consumer on queue through ch, with manual
// acknowledgements, and handles its messages as [Consumer.Run] does until ctx
// is done or the channel closes; set the prefetch with ch.Qos first. When ctx
// is done it cancels the consumer, so that the broker sends nothing more,
// and returns to the queue every message the broker had already sent it
// (counted in [Stats.Returned]), so that after Consume returns every message
// delivered to it is counted once in Handled, Expired, Returned or Refused.
// It returns ctx's error after a stop, nil when the channel closed, or the
// error of registering or cancelling the consumer.
func (c *Consumer) Consume(ctx context.Context, ch Queue, queue string) error {
	if err := c.check(); err != nil {
		return err
	}
	tag := "amqpbudget-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(consumerSeq.Add(1), 10)
	deliveries, err := ch.Consume(queue, tag, false, false, false, false, nil)
	if err != nil {
		return err
	}
	var held returns
	defer func() { held.giveBack(c) }()
	if c.loop(ctx, deliveries, &held) {
		return nil // the channel closed
	}
	if err := ch.Cancel(tag, false); err != nil {
		// The channel is closing: its unacknowledged messages go back to
		// the queue with it, and deliveries may never be drained.
		return errors.Join(ctx.Err(), err)
	}
	for d := range deliveries { // flushed, then closed, by the cancel
		held.hold(d)
	}
	return ctx.Err()
}
