package amqpbudget_test

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/amqpbudget"
	"github.com/timebudget/budget/wire"
)

// FuzzConsumerHeaders feeds a Consumer deliveries with arbitrary budget
// headers and timestamps: it must never panic, must ack or reject every
// message exactly once and count it once, and must never hand the handler
// more time than the relative header or Max allows, whatever the timestamp.
func FuzzConsumerHeaders(f *testing.F) {
	f.Add("1000", "1700000000000", int64(1700000000))
	f.Add("", "", int64(0))
	f.Add("0", "99999999999999999", int64(-5))
	f.Add("abc", "-1", int64(1<<40))
	f.Add("9999999999", "1", int64(1))
	f.Fuzz(func(t *testing.T, rel, abs string, ts int64) {
		a := &acks{}
		var left time.Duration
		var has bool
		c := &amqpbudget.Consumer{Policy: &wire.Policy{Max: time.Hour}, Handler: func(ctx context.Context, _ amqp.Delivery) error {
			left, has = budget.Remaining(ctx)
			return nil
		}}
		d := amqp.Delivery{Acknowledger: a, Headers: amqp.Table{"Request-Timeout-Ms": rel, "Request-Deadline": abs}}
		if ts != 0 {
			d.Timestamp = time.Unix(ts%(1<<35), 0)
		}
		_ = c.Handle(context.Background(), d)
		if a.acked+a.rejected != 1 {
			t.Fatalf("acked %d, rejected %d: want exactly one", a.acked, a.rejected)
		}
		if has && left > time.Hour {
			t.Fatalf("handler got %v, more than Max", left)
		}
		if r, ok, _ := wire.ParseRequestTimeout(rel); ok && has && left > r {
			t.Fatalf("handler got %v, more than the %v the message asked for", left, r)
		}
		if st := c.Stats(); st.Handled+st.Expired+st.Returned+st.Refused != 1 {
			t.Fatalf("stats %+v: the message is not counted exactly once", st)
		}
	})
}

// TestStampAllocs pins Stamp's cost on a message that already has a header
// table: the two header strings, boxing them into the table, and the
// deadline's formatting.
func TestStampAllocs(t *testing.T) {
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	msg := amqp.Publishing{Headers: amqp.Table{}}
	got := testing.AllocsPerRun(100, func() {
		msg.Expiration = ""
		_ = amqpbudget.Stamp(ctx, &msg)
	})
	if got > 5 {
		t.Errorf("Stamp allocates %v times, want at most 5", got)
	}
}

func BenchmarkStamp(b *testing.B) {
	b.ReportAllocs()
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	msg := amqp.Publishing{Headers: amqp.Table{}}
	for b.Loop() {
		msg.Expiration = ""
		_ = amqpbudget.Stamp(ctx, &msg)
	}
}
