package amqpbudget_test

import (
	"context"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/amqpbudget"
)

// Publishing with the budget of the request, and consuming with what is
// left of it.
func Example() {
	var ch *amqp.Channel // from conn.Channel()
	ctx, cancel := budget.Start(context.Background(), 2*time.Second)
	defer cancel()
	if ch != nil {
		_ = amqpbudget.Publish(ctx, ch, "", "orders", false, false, amqp.Publishing{Body: []byte("order 42")})
	}

	c := &amqpbudget.Consumer{Handler: func(ctx context.Context, d amqp.Delivery) error {
		left, _ := budget.Remaining(ctx) // what the publisher's budget has left
		_ = left
		return nil
	}}
	_ = c // go c.Run(ctx, deliveries), deliveries from ch.Consume
}
