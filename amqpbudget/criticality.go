package amqpbudget

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// stampCriticality writes the class ctx carries into msg's headers, unless it
// is the default class. A consumer reads it under its policy's trust, as it
// reads the deadline, and puts it on the handler's context.
func stampCriticality(ctx context.Context, msg *amqp.Publishing) {
	v, ok := edge.CriticalityValue(ctx)
	if !ok {
		return
	}
	if msg.Headers == nil {
		msg.Headers = amqp.Table{}
	}
	msg.Headers[wire.HeaderRequestCriticality] = v
}
