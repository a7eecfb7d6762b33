// Package amqpbudget carries a request's budget through RabbitMQ (AMQP
// 0-9-1, with github.com/rabbitmq/amqp091-go), so that a message whose caller
// has given up is dropped instead of processed.
//
// On the way in, [Stamp] (or [Publish]) writes the budget into the message:
// the headers Request-Timeout-Ms (the time left, in milliseconds, rounded
// down) and Request-Deadline (the deadline on the publisher's wall clock, in
// Unix milliseconds), the message timestamp, and the AMQP expiration
// (per-message TTL) set to the time left, so RabbitMQ itself drops (or
// dead-letters, with x-death reason "expired") a message that reaches the
// head of its queue after its caller has gone. A message with under a
// millisecond left is not published at all.
//
// On the way out, a [Consumer] derives each message's deadline from those
// headers, charging the time the message spent queued, and:
//
//   - acks and drops, counted and never processed, a message whose deadline
//     has passed (or that has less than the consumer's minimum left), or
//     rejects it without requeueing, so the queue's dead-letter exchange
//     receives it with x-death reason "rejected", when DeadLetter is set;
//   - hands the rest to its handler with a context carrying the budget
//     (budget.StartUntil), its queue wait recorded in the ledger as a
//     [budget.EventQueue], and acks the message when the handler returns
//     nil (rejects it without requeueing otherwise).
//
// # Which deadline
//
// The queued time is charged by reading the absolute Request-Deadline when
// the clocks agree: the message was not sent in the consumer's future (its
// timestamp is at most the skew threshold ahead of the consumer's clock) and
// it is consistent with Request-Timeout-Ms and the timestamp. Otherwise the
// relative Request-Timeout-Ms is counted from the message timestamp (which
// AMQP carries in whole seconds, so it may charge up to a second too much),
// and without a timestamp from the message's arrival. Messages with no
// budget get the consumer's Default, or none.
package amqpbudget
