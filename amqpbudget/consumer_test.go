package amqpbudget_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/amqpbudget"
	"github.com/timebudget/budget/wire"
)

// acks records what a consumer did with a delivery.
type acks struct {
	mu                 sync.Mutex
	acked, rejected    int
	requeued, multiple bool
}

func (a *acks) Ack(_ uint64, multiple bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.acked++
	a.multiple = a.multiple || multiple
	return nil
}

func (a *acks) Nack(_ uint64, multiple, requeue bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rejected++
	a.requeued = a.requeued || requeue
	a.multiple = a.multiple || multiple
	return nil
}

func (a *acks) Reject(_ uint64, requeue bool) error { return a.Nack(0, false, requeue) }

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func TestConsumerDeadline(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, tc := range []struct {
		name       string
		headers    amqp.Table
		timestamp  time.Time
		deadLetter bool
		def        time.Duration
		handled    bool
		left       time.Duration // expected time left in the handler, within 1.1 s for timestamps
		tolerance  time.Duration
	}{
		{name: "absolute, queued 400ms of 1s", headers: amqp.Table{"Request-Timeout-Ms": "1000", "Request-Deadline": ms(now.Add(600 * time.Millisecond))},
			timestamp: now.Add(-400 * time.Millisecond), handled: true, left: 600 * time.Millisecond, tolerance: 50 * time.Millisecond},
		{name: "absolute, expired in the queue", headers: amqp.Table{"Request-Timeout-Ms": "1000", "Request-Deadline": ms(now.Add(-time.Second))},
			timestamp: now.Add(-2 * time.Second), handled: false},
		{name: "expired, dead-lettered", headers: amqp.Table{"Request-Timeout-Ms": "1000", "Request-Deadline": ms(now.Add(-time.Second))},
			timestamp: now.Add(-2 * time.Second), deadLetter: true, handled: false},
		{name: "relative from the timestamp", headers: amqp.Table{"request-timeout-ms": int64(5000)},
			timestamp: now.Add(-3 * time.Second), handled: true, left: 2 * time.Second, tolerance: 1100 * time.Millisecond},
		{name: "relative expired by the timestamp", headers: amqp.Table{"Request-Timeout-Ms": "1000"},
			timestamp: now.Add(-3 * time.Second), handled: false},
		{name: "sent in our future: clocks disagree", headers: amqp.Table{"Request-Timeout-Ms": "1000", "Request-Deadline": ms(now.Add(time.Hour + time.Second))},
			timestamp: now.Add(time.Hour), handled: true, left: time.Second, tolerance: 50 * time.Millisecond},
		{name: "relative only", headers: amqp.Table{"Request-Timeout-Ms": "700"}, handled: true, left: 700 * time.Millisecond, tolerance: 50 * time.Millisecond},
		{name: "none", handled: true},
		{name: "none with default", def: 300 * time.Millisecond, handled: true, left: 300 * time.Millisecond, tolerance: 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &acks{}
			var left time.Duration
			var hasDeadline bool
			c := &amqpbudget.Consumer{DeadLetter: tc.deadLetter, Policy: &wire.Policy{Default: tc.def},
				Handler: func(ctx context.Context, _ amqp.Delivery) error {
					left, hasDeadline = budget.Remaining(ctx)
					return nil
				}}
			err := c.Handle(context.Background(), amqp.Delivery{Acknowledger: a, Headers: tc.headers, Timestamp: tc.timestamp})
			if err != nil {
				t.Fatal(err)
			}
			st := c.Stats()
			if got := st.Handled == 1; got != tc.handled {
				t.Fatalf("handled = %v, want %v (stats %+v)", got, tc.handled, st)
			}
			if !tc.handled {
				if st.Expired != 1 {
					t.Errorf("Expired = %d, want 1", st.Expired)
				}
				if tc.deadLetter && (a.rejected != 1 || a.requeued) || !tc.deadLetter && a.acked != 1 {
					t.Errorf("acked %d, rejected %d (requeue %v); want the message %s", a.acked, a.rejected, a.requeued,
						map[bool]string{true: "rejected without requeue", false: "acked"}[tc.deadLetter])
				}
				return
			}
			if a.acked != 1 {
				t.Errorf("acked %d, want 1", a.acked)
			}
			if tc.left == 0 {
				if hasDeadline {
					t.Errorf("handler has a deadline (%v left), want none", left)
				}
				return
			}
			if !hasDeadline || left > tc.left+tc.tolerance || left < tc.left-tc.tolerance {
				t.Errorf("handler has %v left (deadline %v), want %v ± %v", left, hasDeadline, tc.left, tc.tolerance)
			}
		})
	}
}

func TestConsumerHandlerError(t *testing.T) {
	t.Parallel()
	a := &acks{}
	boom := errors.New("boom")
	c := &amqpbudget.Consumer{Handler: func(context.Context, amqp.Delivery) error { return boom }}
	if err := c.Handle(context.Background(), amqp.Delivery{Acknowledger: a}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the handler's", err)
	}
	if a.rejected != 1 || a.requeued || c.Stats().Failed != 1 {
		t.Errorf("rejected %d (requeue %v), stats %+v", a.rejected, a.requeued, c.Stats())
	}
}

func TestConsumerNoHandler(t *testing.T) {
	t.Parallel()
	var c amqpbudget.Consumer
	if err := c.Handle(context.Background(), amqp.Delivery{Acknowledger: &acks{}}); !errors.Is(err, budget.ErrMisconfigured) {
		t.Fatalf("err = %v, want ErrMisconfigured", err)
	}
}

func TestStamp(t *testing.T) {
	t.Parallel()
	ctx, cancel := budget.Start(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var msg amqp.Publishing
	if err := amqpbudget.Stamp(ctx, &msg); err != nil {
		t.Fatal(err)
	}
	rel, _ := msg.Headers["Request-Timeout-Ms"].(string)
	n, err := strconv.Atoi(rel)
	if err != nil || n < 1400 || n > 1500 {
		t.Errorf("Request-Timeout-Ms = %q, want about 1500", rel)
	}
	if msg.Expiration != rel {
		t.Errorf("Expiration = %q, want %q", msg.Expiration, rel)
	}
	abs, _ := msg.Headers["Request-Deadline"].(string)
	d, err := strconv.ParseInt(abs, 10, 64)
	if want := time.Now().Add(1500 * time.Millisecond).UnixMilli(); err != nil || d > want || d < want-100 {
		t.Errorf("Request-Deadline = %q, want about %d", abs, want)
	}
	if msg.Timestamp.IsZero() {
		t.Error("Timestamp not set")
	}

	short := amqp.Publishing{Expiration: "20"}
	if err := amqpbudget.Stamp(ctx, &short); err != nil || short.Expiration != "20" {
		t.Errorf("a shorter expiration was replaced: %q, %v", short.Expiration, err)
	}

	spent, cancel2 := budget.Start(context.Background(), time.Second)
	defer cancel2()
	spent = budget.WithReserve(spent, time.Second-500*time.Microsecond)
	var refused amqp.Publishing
	err = amqpbudget.Stamp(spent, &refused)
	if !errors.Is(err, budget.ErrInsufficient) || refused.Headers != nil || refused.Expiration != "" {
		t.Errorf("Stamp with 0.5ms left: %v, %+v; want a refusal and the message untouched", err, refused)
	}

	var none amqp.Publishing
	if err := amqpbudget.Stamp(context.Background(), &none); err != nil || none.Headers != nil || none.Expiration != "" {
		t.Errorf("Stamp without a deadline changed the message: %+v, %v", none, err)
	}
}
