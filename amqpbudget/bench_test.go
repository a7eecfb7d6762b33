package amqpbudget_test

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget/amqpbudget"
)

// BenchmarkHandle is a message stamped by Publish going through a consumer to
// a handler that does nothing: the consumer's own cost per message.
func BenchmarkHandle(b *testing.B) {
	b.ReportAllocs()
	c := &amqpbudget.Consumer{Handler: func(context.Context, amqp.Delivery) error { return nil }}
	now := time.Now()
	d := amqp.Delivery{Acknowledger: &acks{}, Timestamp: now, Headers: amqp.Table{
		"Request-Timeout-Ms": "3600000", "Request-Deadline": ms(now.Add(time.Hour))}}
	for b.Loop() {
		_ = c.Handle(context.Background(), d)
	}
}

// TestHandleAllocs pins what handling a stamped message allocates: the
// message's budget headers, read once, and the budget's context (four for
// context.WithDeadlineCause, one for the budget and its ledger).
func TestHandleAllocs(t *testing.T) {
	c := &amqpbudget.Consumer{Handler: func(context.Context, amqp.Delivery) error { return nil }}
	now := time.Now()
	d := amqp.Delivery{Acknowledger: &acks{}, Timestamp: now, Headers: amqp.Table{
		"Request-Timeout-Ms": "3600000", "Request-Deadline": ms(now.Add(time.Hour))}}
	if n := testing.AllocsPerRun(100, func() { _ = c.Handle(context.Background(), d) }); n > 6 {
		t.Errorf("Handle allocates %v times, want at most 6", n)
	}
}
