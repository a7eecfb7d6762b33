package amqpbudget_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
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

// TestConsumerDeadline runs on synctest's clock, so the time a handler sees
// left is exact.
func TestConsumerDeadline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		headers    func(now time.Time) amqp.Table
		sentAt     time.Duration // the timestamp, from now; 0: none
		deadLetter bool
		def        time.Duration
		handled    bool
		left       time.Duration // expected time left in the handler; 0: no deadline
	}{
		{name: "absolute, queued 400ms of 1s", headers: func(now time.Time) amqp.Table {
			return amqp.Table{"Request-Timeout-Ms": "1000", "Request-Deadline": ms(now.Add(600 * time.Millisecond))}
		}, sentAt: -400 * time.Millisecond, handled: true, left: 600 * time.Millisecond},
		{name: "absolute, expired in the queue", headers: func(now time.Time) amqp.Table {
			return amqp.Table{"Request-Timeout-Ms": "1000", "Request-Deadline": ms(now.Add(-time.Second))}
		}, sentAt: -2 * time.Second},
		{name: "expired, dead-lettered", headers: func(now time.Time) amqp.Table {
			return amqp.Table{"Request-Timeout-Ms": "1000", "Request-Deadline": ms(now.Add(-time.Second))}
		}, sentAt: -2 * time.Second, deadLetter: true},
		{name: "relative from the timestamp", headers: func(time.Time) amqp.Table { return amqp.Table{"request-timeout-ms": int64(5000)} },
			sentAt: -3 * time.Second, handled: true, left: 2 * time.Second},
		{name: "relative expired by the timestamp", headers: func(time.Time) amqp.Table { return amqp.Table{"Request-Timeout-Ms": "1000"} },
			sentAt: -3 * time.Second},
		{name: "sent in our future: clocks disagree", headers: func(now time.Time) amqp.Table {
			return amqp.Table{"Request-Timeout-Ms": "1000", "Request-Deadline": ms(now.Add(time.Hour + time.Second))}
		}, sentAt: time.Hour, handled: true, left: time.Second},
		{name: "relative only", headers: func(time.Time) amqp.Table { return amqp.Table{"Request-Timeout-Ms": "700"} },
			handled: true, left: 700 * time.Millisecond},
		{name: "none", headers: func(time.Time) amqp.Table { return nil }, handled: true},
		{name: "none with default", headers: func(time.Time) amqp.Table { return nil }, def: 300 * time.Millisecond,
			handled: true, left: 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				now := time.Now()
				var timestamp time.Time
				if tc.sentAt != 0 {
					timestamp = now.Add(tc.sentAt)
				}
				a := &acks{}
				var left time.Duration
				var hasDeadline bool
				c := &amqpbudget.Consumer{DeadLetter: tc.deadLetter, Policy: &wire.Policy{Default: tc.def},
					Handler: func(ctx context.Context, _ amqp.Delivery) error {
						left, hasDeadline = budget.Remaining(ctx)
						return nil
					}}
				err := c.Handle(context.Background(), amqp.Delivery{Acknowledger: a, Headers: tc.headers(now), Timestamp: timestamp})
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
				if !hasDeadline || left != tc.left {
					t.Errorf("handler has %v left (deadline %v), want %v", left, hasDeadline, tc.left)
				}
			})
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
	// On synctest's clock the stamped figures are exact.
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := budget.Start(context.Background(), 1500*time.Millisecond)
		defer cancel()
		var msg amqp.Publishing
		if err := amqpbudget.Stamp(ctx, &msg); err != nil {
			t.Fatal(err)
		}
		rel, _ := msg.Headers["Request-Timeout-Ms"].(string)
		n, err := strconv.Atoi(rel)
		if err != nil || n != 1500 {
			t.Errorf("Request-Timeout-Ms = %q, want 1500", rel)
		}
		if msg.Expiration != rel {
			t.Errorf("Expiration = %q, want %q", msg.Expiration, rel)
		}
		abs, _ := msg.Headers["Request-Deadline"].(string)
		d, err := strconv.ParseInt(abs, 10, 64)
		if want := time.Now().Add(1500 * time.Millisecond).UnixMilli(); err != nil || d != want {
			t.Errorf("Request-Deadline = %q, want %d", abs, want)
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
	})
}
