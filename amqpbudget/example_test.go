package amqpbudget_test

import (
	"context"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/amqpbudget"
	"github.com/timebudget/budget/wire"
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

// A consumer of a queue that untrusted services publish to caps every
// message's budget, and on shutdown gives back to the queue what it has not
// finished.
func ExampleConsumer_Consume() {
	c := &amqpbudget.Consumer{
		Policy: &wire.Policy{Max: 30 * time.Second, Default: 10 * time.Second},
		Handler: func(ctx context.Context, d amqp.Delivery) error {
			return nil // process d.Body within ctx's budget
		},
	}
	var ch *amqp.Channel // from conn.Channel(), with ch.Qos(prefetch, 0, false)
	ctx, stop := context.WithCancel(context.Background())
	stop() // a shutdown: SIGTERM, say
	if ch != nil {
		_ = c.Consume(ctx, ch, "orders")
	}
	st := c.Stats()
	fmt.Println(st.Handled + st.Expired + st.Returned + st.Refused)
	// Output: 0
}
