package amqpbudget

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// stampCriticality writes the class ctx carries into msg's headers, unless it
// is the default class, and the probe mark when ctx is marked as a probe. A
// consumer reads them under its policy's trust, as it reads the deadline,
// and puts them on the handler's context.
func stampCriticality(ctx context.Context, msg *amqp.Publishing) {
	class, isClass := edge.CriticalityValue(ctx)
	probe, isProbe := edge.ProbeValue(ctx)
	if !isClass && !isProbe {
		return
	}
	if msg.Headers == nil {
		msg.Headers = amqp.Table{}
	}
	if isClass {
		msg.Headers[wire.HeaderRequestCriticality] = class
	}
	if isProbe {
		msg.Headers[wire.HeaderBudgetProbe] = probe
	}
}
