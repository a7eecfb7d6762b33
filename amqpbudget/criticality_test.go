package amqpbudget_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/amqpbudget"
	"github.com/timebudget/budget/wire"
)

// Stamp writes the class beside the deadline, and alone without one; a
// consumer reads it under its policy's trust.
func TestStampAndReadCriticality(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c        budget.Criticality
		deadline bool
		want     any
	}{
		{budget.Critical, true, "critical"},
		{budget.Sheddable, false, "sheddable"},
		{budget.DefaultCriticality, true, nil},
	} {
		ctx := budget.WithCriticality(context.Background(), tc.c)
		if tc.deadline {
			var cancel context.CancelFunc
			ctx, cancel = budget.Start(ctx, time.Second)
			defer cancel()
		}
		var msg amqp.Publishing
		if err := amqpbudget.Stamp(ctx, &msg); err != nil {
			t.Fatal(err)
		}
		if got := msg.Headers[wire.HeaderRequestCriticality]; got != tc.want {
			t.Errorf("%v: stamped %v, want %v", tc.c, got, tc.want)
		}
	}
	for _, tc := range []struct {
		policy *wire.Policy
		header any
		want   budget.Criticality
	}{
		{nil, "Critical", budget.Critical},
		{&wire.Policy{Trust: wire.SourcesNone, Criticality: -1}, "critical", budget.Sheddable},
		{nil, []byte("sheddable"), budget.Sheddable},
		{nil, int32(1), budget.DefaultCriticality}, // not a name: malformed, ignored
	} {
		var got budget.Criticality
		c := &amqpbudget.Consumer{Policy: tc.policy, Handler: func(ctx context.Context, _ amqp.Delivery) error {
			got = budget.CriticalityFrom(ctx)
			return nil
		}}
		d := amqp.Delivery{Acknowledger: &acks{}, Headers: amqp.Table{"request-criticality": tc.header}}
		if err := c.Handle(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%v under %+v: %v, want %v", tc.header, tc.policy, got, tc.want)
		}
	}
}

// Through RabbitMQ, over two hops: a message published with a class is
// consumed with it, and the consumer's own publication carries it on to the
// second queue, with or without a deadline.
func TestCriticalityAcrossTwoRabbitMQHops(t *testing.T) {
	conn := dial(t)
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ch.Close() }()
	q1, q2 := declareQueue(t, ch, nil), declareQueue(t, ch, nil)
	consume := func(q string) <-chan amqp.Delivery {
		d, err := ch.Consume(q, "", false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	in1, in2 := consume(q1), consume(q2)
	forward := &amqpbudget.Consumer{Handler: func(ctx context.Context, d amqp.Delivery) error {
		return amqpbudget.Publish(ctx, ch, "", q2, false, false, amqp.Publishing{Body: d.Body})
	}}
	seen := make(chan string, 1)
	last := &amqpbudget.Consumer{Handler: func(ctx context.Context, d amqp.Delivery) error {
		_, deadline := ctx.Deadline()
		seen <- fmt.Sprintf("%s %v %v", budget.CriticalityFrom(ctx), d.Headers[wire.HeaderRequestCriticality], deadline)
		return nil
	}}
	for _, tc := range []struct {
		c        budget.Criticality
		deadline bool
		want     string
	}{
		{budget.Critical, true, "critical critical true"},
		{budget.Sheddable, true, "sheddable sheddable true"},
		{budget.DefaultCriticality, true, "default <nil> true"},
		{budget.Critical, false, "critical critical false"},
	} {
		ctx := budget.WithCriticality(context.Background(), tc.c)
		cancel := context.CancelFunc(func() {})
		if tc.deadline {
			ctx, cancel = budget.Start(ctx, 10*time.Second)
		}
		err := amqpbudget.Publish(ctx, ch, "", q1, false, false, amqp.Publishing{Body: []byte(tc.c.String())})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct {
			in <-chan amqp.Delivery
			c  *amqpbudget.Consumer
		}{{in1, forward}, {in2, last}} {
			select {
			case d := <-step.in:
				if err := step.c.Handle(context.Background(), d); err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no message within 10 s")
			}
		}
		if got := <-seen; got != tc.want {
			t.Errorf("%v (deadline %v): the second hop saw %q, want %q", tc.c, tc.deadline, got, tc.want)
		}
	}
}
