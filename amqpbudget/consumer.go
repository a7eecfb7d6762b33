package amqpbudget

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// Consumer hands messages to Handler with the budget their publisher gave
// them, and drops those whose budget ran out while they were queued (see the
// package documentation). Set the fields before first use and do not change
// them afterwards. The zero value with a Handler is ready to use. A Consumer
// is safe for concurrent use: several goroutines may call [Consumer.Handle]
// or [Consumer.Run] at once, and the counters are atomic.
type Consumer struct {
	// Handler processes one message within ctx's budget. Returning nil acks
	// the message; an error rejects it without requeueing.
	Handler func(ctx context.Context, d amqp.Delivery) error
	// Stage names the consumer in the ledger and in errors. Empty means
	// "amqp.consume".
	Stage string
	// Default is the budget of a message that carries none. Zero means no
	// deadline for such messages.
	Default time.Duration
	// Max caps every message's budget, counted from its arrival. Zero means
	// no cap.
	Max time.Duration
	// Min drops messages with less than Min left on arrival, as expired.
	// Zero drops only those whose deadline has passed.
	Min time.Duration
	// Skew is how far the publisher's clock may be ahead of ours before its
	// absolute deadline is ignored (see the package documentation). Zero
	// means [wire.DefaultSkew], 250 ms.
	Skew time.Duration
	// DeadLetter rejects expired messages without requeueing instead of
	// acking them, so that the queue's dead-letter exchange, if it has one,
	// receives them with x-death reason "rejected".
	DeadLetter bool
	// OnExpired, when not nil, is called with each expired message before
	// it is dropped, with how long past its deadline it was (zero or
	// negative when it had less than Min left).
	OnExpired func(d amqp.Delivery, late time.Duration)

	handled, expired, failed, skewed atomic.Int64
}

// Stats are a Consumer's counters.
type Stats struct {
	// Handled counts messages handed to the Handler.
	Handled int64
	// Expired counts messages dropped because their budget had run out.
	Expired int64
	// Failed counts messages whose Handler returned an error (included in
	// Handled).
	Failed int64
	// Skewed counts messages whose absolute deadline was ignored because the
	// clocks disagreed.
	Skewed int64
}

// Stats returns the counters so far.
func (c *Consumer) Stats() Stats {
	return Stats{Handled: c.handled.Load(), Expired: c.expired.Load(), Failed: c.failed.Load(), Skewed: c.skewed.Load()}
}

// ErrNoHandler is returned by Handle and Run when the Consumer has no
// Handler; it matches [budget.ErrMisconfigured]. The message is not acked.
var ErrNoHandler = errors.Join(budget.ErrMisconfigured, errors.New("amqpbudget: Consumer has no Handler"))

func (c *Consumer) stage() string {
	if c.Stage == "" {
		return "amqp.consume"
	}
	return c.Stage
}

// Handle processes one delivery: it drops the message, counted, when its
// budget has run out, and otherwise runs the Handler with a context derived
// from parent carrying the message's budget, then acks or rejects it. It
// returns the Handler's error, or the error of the acknowledgement.
func (c *Consumer) Handle(parent context.Context, d amqp.Delivery) error {
	if c.Handler == nil {
		return ErrNoHandler
	}
	now := time.Now()
	skew := c.Skew
	if skew <= 0 {
		skew = wire.DefaultSkew
	}
	dl := deadlineOf(d, now, skew)
	if dl.skew {
		c.skewed.Add(1)
	}
	if !dl.ok && c.Default > 0 {
		dl.at, dl.ok = now.Add(c.Default), true
	}
	if dl.ok && c.Max > 0 && dl.at.After(now.Add(c.Max)) {
		dl.at = now.Add(c.Max)
	}
	if dl.ok && dl.at.Sub(now) <= max(c.Min, 0) {
		return c.drop(d, now, dl.at)
	}
	ctx, cancel := parent, context.CancelFunc(func() {})
	if dl.ok {
		ctx, cancel = budget.Config{Stage: c.stage()}.StartUntil(parent, dl.at)
	}
	defer cancel()
	// Building the context took time; a message that ran out meanwhile is
	// dropped too, so no handler starts on a message whose deadline passed.
	// (The clock is read rather than ctx.Err, which turns only when the
	// context's timer has fired, a little after the deadline.)
	if t := time.Now(); dl.ok && !t.Before(dl.at) {
		return c.drop(d, t, dl.at)
	}
	if !dl.sent.IsZero() {
		budget.Note(ctx, budget.Event{Kind: budget.EventQueue, Stage: c.stage(), At: dl.sent,
			Duration: max(now.Sub(dl.sent), 0), Remaining: dl.at.Sub(dl.sent), Outcome: budget.OutcomeOK})
	}
	c.handled.Add(1)
	if err := c.Handler(ctx, d); err != nil {
		c.failed.Add(1)
		if rerr := d.Reject(false); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	return d.Ack(false)
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

// Run handles deliveries one at a time until the channel is closed (it then
// returns nil) or ctx is done (it returns ctx's error). Start several Runs on
// the same channel for concurrency, with a prefetch (Channel.Qos) to match.
// Errors of single messages are counted, not returned.
func (c *Consumer) Run(ctx context.Context, deliveries <-chan amqp.Delivery) error {
	if c.Handler == nil {
		return ErrNoHandler
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case d, ok := <-deliveries:
			if !ok {
				return nil
			}
			_ = c.Handle(ctx, d)
		}
	}
}
