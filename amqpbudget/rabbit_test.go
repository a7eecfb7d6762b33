package amqpbudget_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/amqpbudget"
	"github.com/timebudget/budget/wire"
)

const envAMQP = "BUDGET_TEST_AMQP"

func dial(t *testing.T) *amqp.Connection {
	t.Helper()
	url := os.Getenv(envAMQP)
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI must run the RabbitMQ tests", envAMQP)
		}
		t.Skipf("set %s (e.g. amqp://guest:guest@127.0.0.1:5672/) to run against RabbitMQ", envAMQP)
	}
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("RabbitMQ at %s: %v", envAMQP, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestSlowConsumerThroughRabbitMQ publishes 10,000 messages with mixed
// budgets (20 ms to 5 s) to a queue drained, while they are published, by a
// slow consumer (1 ms per message, one at a time, 500 prefetched, so some
// expire in the consumer's buffer and some in the queue). Every message is accounted for: in = processed +
// dropped by the consumer + dropped by the broker (dead-lettered with
// x-death reason "expired" into a second queue, and counted there), and none
// is processed after its deadline.
// lateSlack is how long after its deadline a handler may see a message the
// consumer started in time: the scheduling delay of a busy 2-core machine.
const lateSlack = 25 * time.Millisecond

func TestSlowConsumerThroughRabbitMQ(t *testing.T) {
	conn := dial(t)
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ch.Close() }()
	dlq := declareQueue(t, ch, nil)
	name := declareQueue(t, ch, amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq})

	cch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cch.Close() }()
	if err := cch.Qos(500, 0, false); err != nil {
		t.Fatal(err)
	}
	var late atomic.Int64
	c := &amqpbudget.Consumer{Handler: func(ctx context.Context, d amqp.Delivery) error {
		// Processed after its deadline means started with nothing left, by
		// the context or by the publisher's own clock. The consumer decides
		// before the handler runs, and on a loaded machine the handler's
		// goroutine may wait for a CPU after that decision: lateSlack allows
		// for that wait (and for the header's rounding down to the
		// millisecond). A consumer that ignored deadlines would start
		// messages seconds late, behind 10,000 others.
		left, _ := budget.Remaining(ctx)
		dl, _, _ := wire.ParseRequestDeadline(fmt.Sprint(d.Headers[wire.HeaderRequestDeadline]))
		if now := time.Now(); left < -lateSlack || now.After(dl.Add(lateSlack)) {
			if late.Add(1) <= 3 {
				t.Logf("late: %v left by the context, %v past the header's deadline", left, now.Sub(dl))
			}
		}
		time.Sleep(time.Millisecond)
		return nil
	}}
	deliveries, err := cch.Consume(name, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Run(ctx, deliveries) })
	defer func() { cancel(); wg.Wait() }()

	// Publish with confirms, so that "in" counts what the broker took.
	budgets := []time.Duration{20 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond, 5 * time.Second}
	in, refused := publishConfirmed(t, ch, name, 10000, func(i int) time.Duration { return budgets[i%len(budgets)] })

	for limit := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		q, err := ch.QueueDeclarePassive(name, false, false, false, false, amqp.Table{
			"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq,
		})
		if err != nil {
			t.Fatal(err)
		}
		st := c.Stats()
		if q.Messages == 0 && st.Handled+st.Expired+int64(brokerDropped(t, ch, dlq)) >= int64(in) {
			break
		}
		if time.Now().After(limit) {
			t.Fatalf("queue not drained: %d ready, stats %+v", q.Messages, st)
		}
	}
	st := c.Stats()
	dropped := brokerDropped(t, ch, dlq)
	t.Logf("published %d (refused %d), processed %d, dropped by the consumer %d, by the broker %d",
		in, refused, st.Handled, st.Expired, dropped)
	if got := st.Handled + st.Expired + int64(dropped); got != int64(in) {
		t.Errorf("processed + expired = %d, want the %d published: messages were lost or duplicated", got, in)
	}
	if n := late.Load(); n != 0 {
		t.Errorf("%d messages processed after their deadline", n)
	}
	if st.Handled == 0 || st.Expired+int64(dropped) == 0 {
		t.Errorf("stats %+v, broker drops %d: the test needs both processed and expired messages", st, dropped)
	}
}

// brokerDropped counts the messages the broker dead-lettered.
func brokerDropped(t *testing.T, ch *amqp.Channel, dlq string) int {
	t.Helper()
	q, err := ch.QueueDeclarePassive(dlq, false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return q.Messages
}
