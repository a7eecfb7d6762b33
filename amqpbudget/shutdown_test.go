package amqpbudget_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/amqpbudget"
)

// declareQueue declares a fresh queue with args, deleted after the test, and
// returns its name.
func declareQueue(t *testing.T, ch *amqp.Channel, args amqp.Table) string {
	t.Helper()
	name := fmt.Sprintf("amqpbudget-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	if _, err := ch.QueueDeclare(name, false, false, false, false, args); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(name, false, false, false) })
	return name
}

// publishConfirmed publishes n messages to queue, message i with the budget
// budgetOf(i), with publisher confirms, and returns how many the broker
// took and how many Publish refused for lack of time.
func publishConfirmed(t *testing.T, ch *amqp.Channel, queue string, n int, budgetOf func(i int) time.Duration) (in, refused int) {
	t.Helper()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, n))
	for i := range n {
		ctx, cancel := budget.Start(context.Background(), budgetOf(i))
		err := amqpbudget.Publish(ctx, ch, "", queue, false, false, amqp.Publishing{Body: []byte(fmt.Sprint(i))})
		cancel()
		if err != nil {
			refused++
		}
	}
	for range n - refused {
		select {
		case c := <-confirms:
			if c.Ack {
				in++
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("publisher confirms stopped after %d", in)
		}
	}
	return in, refused
}

// minuteEach gives every message a minute.
func minuteEach(int) time.Duration { return time.Minute }

// streamed publishes n messages with a minute each to a fresh queue and
// returns the publishing channel, a consumer channel with the prefetch set,
// the queue and how many messages the broker took.
func streamed(t *testing.T, conn *amqp.Connection, n, prefetch int) (ch, cch *amqp.Channel, queue string, in int) {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Close() })
	queue = declareQueue(t, ch, nil)
	in, _ = publishConfirmed(t, ch, queue, n, minuteEach)
	if cch, err = conn.Channel(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cch.Close() })
	if err := cch.Qos(prefetch, 0, false); err != nil {
		t.Fatal(err)
	}
	return ch, cch, queue, in
}

// ready returns the number of messages ready in queue, waiting until it stops
// changing (a requeue reaches the queue asynchronously).
func ready(t *testing.T, ch *amqp.Channel, queue string, want int) int {
	t.Helper()
	var n int
	for limit := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		q, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		n = q.Messages
		if n == want || time.Now().After(limit) {
			return n
		}
	}
}

// stopAt returns a Handler that takes a millisecond per message and, at the
// nth message, stops the consumer through stop and returns its context's
// error, as a handler that honours its context does on a graceful shutdown.
// ok counts the messages it finished.
func stopAt(n int64, stop context.CancelFunc, ok *atomic.Int64) func(context.Context, amqp.Delivery) error {
	var seen atomic.Int64
	return func(ctx context.Context, _ amqp.Delivery) error {
		if seen.Add(1) == n {
			stop() // the shutdown arrives while this message is in flight
			<-ctx.Done()
			return ctx.Err()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
		ok.Add(1)
		return nil
	}
}

// drain takes every message left in queue and counts those the broker
// redelivers (the ones a consumer had and gave back).
func drain(t *testing.T, conn *amqp.Connection, queue string) (total, redelivered int) {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ch.Close() }()
	for {
		d, ok, err := ch.Get(queue, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return total, redelivered
		}
		total++
		if d.Redelivered {
			redelivered++
		}
	}
}

// TestRunStopReturnsMessages stops Run in the middle of a stream: the 20th
// message's handler stops it and returns ctx.Err(). No message may be lost
// for the shutdown: every one published is processed, expired or back in the
// queue once the consumer's channel is closed, and none is rejected.
func TestRunStopReturnsMessages(t *testing.T) {
	ch, cch, queue, in := streamed(t, dial(t), 200, 50)
	deliveries, err := cch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var ok atomic.Int64
	c := &amqpbudget.Consumer{Handler: stopAt(20, stop, &ok)}
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Run(ctx, deliveries) })
	wg.Wait()
	// Closing the channel gives back what the client library still held.
	_ = cch.Close()

	st := c.Stats()
	queued := ready(t, ch, queue, in-int(st.Handled)-int(st.Expired))
	t.Logf("in %d, stats %+v, back in the queue %d", in, st, queued)
	if st.Failed != 0 || st.Handled != ok.Load() {
		t.Errorf("stats %+v, %d finished by the handler: messages rejected on a graceful shutdown", st, ok.Load())
	}
	if st.Returned < 1 {
		t.Errorf("Returned = %d, want at least the message in flight", st.Returned)
	}
	if got := int(st.Handled) + int(st.Expired) + queued; got != in {
		t.Errorf("processed + expired + queued = %d, want the %d published: messages were lost", got, in)
	}
}

// TestConsumeStopReturnsMessages stops Consume in the middle of a stream
// with 50 messages prefetched. Every message delivered to the consumer is
// counted once: in = processed + expired + returned + never delivered, and
// the returned ones are exactly those the broker then redelivers.
func TestConsumeStopReturnsMessages(t *testing.T) {
	conn := dial(t)
	_, cch, queue, in := streamed(t, conn, 300, 50)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var ok atomic.Int64
	c := &amqpbudget.Consumer{Handler: stopAt(20, stop, &ok)}
	if err := c.Consume(ctx, cch, queue); !errors.Is(err, context.Canceled) {
		t.Fatalf("Consume = %v, want context.Canceled", err)
	}
	st := c.Stats()
	left, redelivered := drain(t, conn, queue)
	t.Logf("in %d, stats %+v, left in the queue %d (%d redelivered)", in, st, left, redelivered)
	if st.Failed != 0 || st.Refused != 0 || st.Handled != ok.Load() {
		t.Errorf("stats %+v, %d finished by the handler: messages rejected on a graceful shutdown", st, ok.Load())
	}
	if st.Returned < 2 {
		t.Errorf("Returned = %d, want the message in flight and prefetched ones", st.Returned)
	}
	if int64(redelivered) != st.Returned {
		t.Errorf("%d messages redelivered, want the %d returned", redelivered, st.Returned)
	}
	if got := int(st.Handled+st.Expired+st.Returned) + left - redelivered; got != in {
		t.Errorf("processed + expired + returned + never delivered = %d, want the %d published", got, in)
	}
}
