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
// On the way out, a [Consumer] decides each message's budget with a
// [wire.Policy], the inbound rule HTTP and gRPC servers apply (through the
// same code, in package edge), charging the time the message spent queued,
// and:
//
//   - acks and drops, counted and never processed, a message whose deadline
//     has passed (or that has less than the policy's Min left), or rejects
//     it without requeueing, so the queue's dead-letter exchange receives it
//     with x-death reason "rejected", when DeadLetter is set;
//   - rejects without requeueing a message with a malformed budget header
//     under a Strict policy (a lenient one counts the value and ignores it);
//   - hands the rest to its handler with a context carrying the budget, its
//     queue wait recorded in the ledger as a [budget.EventQueue], and acks
//     the message when the handler returns nil (rejects it without
//     requeueing otherwise);
//   - on a shutdown, returns to the queue what it has not finished: see
//     [Consumer.Run] and [Consumer.Consume]. Every message a consumer
//     receives is counted once ([Stats]): in = processed + expired +
//     returned (+ refused).
//
// # Which deadline
//
// Header names are matched in any letter case and every spelling counts, the
// strictest value winning, as with repeated HTTP fields. Relative values
// count from when the message was sent, so its wait in the queue is charged
// ([wire.Policy.DecideSent]): the instant [Stamp] wrote, to the millisecond,
// when the message carries both headers, and otherwise its AMQP timestamp
// (whole seconds, so it may charge up to a second too much). A sending time
// further in the consumer's future than the policy's skew threshold means
// the clocks disagree: it is counted ([Stats.Skewed]) and the relative value
// counts from the message's arrival, so a publisher whose clock runs ahead
// cannot add time. Without a sending time a relative value counts from
// arrival. The absolute Request-Deadline is used as the policy uses it for
// any request: when it agrees with the relative values within the skew
// threshold. Messages with no usable budget get the policy's Default, or
// Max, or none.
//
// # Retries and duplicates
//
// [Publish] classifies its errors ([budget.SentOf]) so that a [budget.Retry]
// around it does not publish twice a message that may have left, and sends
// the idempotency key of its context ([budget.WithIdempotencyKey]) as the
// message id, the same on every attempt, so that a consumer can recognise a
// message published twice (by a retry after an uncertain publish, or by
// publisher confirms lost with their connection) and handle it once.
//
// The no-retry rule of the other adapters (a server that shed a request, or
// gave up after its own retries, says Budget-No-Retry, and its caller does
// not retry) needs no marker here: a [Consumer] never requeues a message
// whose handler failed (it rejects it, for the dead-letter exchange), so it
// makes no retries of its own, and a handler that gave up ([budget.GaveUp])
// ends the message there. Only a shutdown returns messages to the queue,
// unhandled or interrupted by the shutdown itself. A publish has no answer
// to carry the marker back: the queue decouples the publisher from the
// consumer's outcome.
package amqpbudget
