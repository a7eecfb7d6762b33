package amqpbudget_test

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/amqpbudget"
	"github.com/timebudget/budget/wire"
)

// policyCase is a message and the budget a consumer under p gives it.
type policyCase struct {
	name      string
	p         *wire.Policy
	headers   amqp.Table
	sentAt    time.Duration // the message timestamp, from now; 0: none
	deadline  time.Duration // a Request-Deadline, from now, added to headers; 0: none
	left      time.Duration // 0: no deadline
	refused   bool          // rejected for a malformed value, handler not run
	skewed    bool
	malformed bool
}

// TestConsumerPolicy: a consumer decides a message's budget with wire.Policy, as an
// HTTP or gRPC server does, and trusts a publisher no further than the policy says.
func TestConsumerPolicy(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	const huge = "9999999999" // Request-Timeout-Ms's largest: 115 days
	for _, tc := range []policyCase{
		{name: "untrusted publisher: Default, whatever it asks", p: &wire.Policy{Trust: wire.SourcesNone, Default: 300 * ms},
			headers: amqp.Table{"Request-Timeout-Ms": huge}, left: 300 * ms},
		{name: "untrusted publisher, no Default: Max", p: &wire.Policy{Trust: wire.SourcesNone, Max: 400 * ms},
			headers: amqp.Table{"Request-Timeout-Ms": huge}, left: 400 * ms},
		{name: "Max caps 115 days", p: &wire.Policy{Max: time.Second}, headers: amqp.Table{"Request-Timeout-Ms": huge}, left: time.Second},
		{name: "Max caps 292 years", p: &wire.Policy{Max: time.Second}, headers: amqp.Table{"Request-Deadline": "999999999999999"}, left: time.Second},
		{name: "Max applies to a message with no budget", p: &wire.Policy{Max: time.Second}, left: time.Second},
		{name: "timestamp an hour ahead adds nothing", p: &wire.Policy{}, headers: amqp.Table{"Request-Timeout-Ms": "1000"},
			sentAt: time.Hour, left: time.Second, skewed: true},
		{name: "stamp pair an hour ahead adds nothing", p: &wire.Policy{},
			headers: amqp.Table{"Request-Timeout-Ms": "1000"}, deadline: time.Hour + time.Second,
			sentAt: time.Hour, left: time.Second, skewed: true},
		{name: "stamp pair: the wait in the queue is charged", p: &wire.Policy{},
			headers: amqp.Table{"Request-Timeout-Ms": "1000"}, deadline: 600 * ms, sentAt: -time.Second, left: 600 * ms},
		{name: "timestamp only: the wait is charged", p: &wire.Policy{},
			headers: amqp.Table{"Request-Timeout-Ms": "5000"}, sentAt: -3 * time.Second, left: 2 * time.Second},
		{name: "timestamp within the skew: counted from arrival", p: &wire.Policy{}, headers: amqp.Table{"Request-Timeout-Ms": "1000"},
			sentAt: 100 * ms, left: time.Second},
		{name: "negative number: malformed, counted, Default applies", p: &wire.Policy{Default: 300 * ms},
			headers: amqp.Table{"Request-Timeout-Ms": int64(-5)}, left: 300 * ms, malformed: true},
		{name: "negative text: malformed", p: &wire.Policy{Default: 300 * ms},
			headers: amqp.Table{"Request-Timeout-Ms": "-5"}, left: 300 * ms, malformed: true},
		{name: "float: malformed", p: &wire.Policy{Default: 300 * ms},
			headers: amqp.Table{"Request-Timeout-Ms": float64(1000)}, left: 300 * ms, malformed: true},
		{name: "boolean deadline: malformed", p: &wire.Policy{},
			headers: amqp.Table{"Request-Deadline": true}, malformed: true},
		{name: "an integer of another width is read", p: &wire.Policy{}, headers: amqp.Table{"request-timeout-ms": int32(700)}, left: 700 * ms},
		{name: "strict: malformed is refused", p: &wire.Policy{Strict: true},
			headers: amqp.Table{"Request-Timeout-Ms": "abc"}, refused: true, malformed: true},
		{name: "two letter cases: the strictest wins", p: &wire.Policy{},
			headers: amqp.Table{"request-timeout-ms": "100", "REQUEST-TIMEOUT-MS": "60000"}, left: 100 * ms},
		{name: "two letter cases, the other way round", p: &wire.Policy{},
			headers: amqp.Table{"request-timeout-ms": "60000", "REQUEST-TIMEOUT-MS": "100"}, left: 100 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// On the bubble's clock, time moves only when every goroutine waits:
			// what the handler sees is exact.
			synctest.Test(t, func(t *testing.T) { consumeOnce(t, tc) })
		})
	}
}

// consumeOnce hands one message, 20 times over (map order is random: a
// case-dependent outcome would show), to a consumer under p and checks what
// its handler got.
func consumeOnce(t *testing.T, tc policyCase) {
	now := time.Now()
	headers := maps.Clone(tc.headers)
	if tc.deadline != 0 {
		if headers == nil {
			headers = amqp.Table{}
		}
		headers["Request-Deadline"] = unixMs(now.Add(tc.deadline))
	}
	var timestamp time.Time
	if tc.sentAt != 0 {
		timestamp = now.Add(tc.sentAt)
	}
	for range 20 {
		a := &acks{}
		var left time.Duration
		var has, ran bool
		c := &amqpbudget.Consumer{Policy: tc.p, Handler: func(ctx context.Context, _ amqp.Delivery) error {
			left, has = budget.Remaining(ctx)
			ran = true
			return nil
		}}
		err := c.Handle(context.Background(), amqp.Delivery{Acknowledger: a, Headers: headers, Timestamp: timestamp})
		st := c.Stats()
		if (st.Skewed == 1) != tc.skewed || (st.Malformed == 1) != tc.malformed {
			t.Fatalf("stats %+v; want skewed %v, malformed %v", st, tc.skewed, tc.malformed)
		}
		if tc.refused {
			if ran || !errors.Is(err, wire.ErrMalformed) || st.Refused != 1 || a.rejected != 1 || a.requeued {
				t.Fatalf("ran %v, err %v, stats %+v, rejected %d (requeue %v); want a refusal without requeueing",
					ran, err, st, a.rejected, a.requeued)
			}
			continue
		}
		if err != nil || !ran || a.acked != 1 {
			t.Fatalf("err %v, ran %v, acked %d", err, ran, a.acked)
		}
		if tc.left == 0 {
			if has {
				t.Fatalf("handler has a deadline (%v left), want none", left)
			}
			continue
		}
		if !has || left != tc.left {
			t.Fatalf("handler has %v left (deadline %v), want %v", left, has, tc.left)
		}
	}
}

// TestConsumerMalformedDeterministic: with malformed values under two letter cases
// of a header, the one a strict refusal names does not depend on map order.
func TestConsumerMalformedDeterministic(t *testing.T) {
	t.Parallel()
	var first string
	for i := range 50 {
		c := &amqpbudget.Consumer{Policy: &wire.Policy{Strict: true}, Handler: func(context.Context, amqp.Delivery) error { return nil }}
		err := c.Handle(context.Background(), amqp.Delivery{Acknowledger: &acks{},
			Headers: amqp.Table{"request-timeout-ms": "x", "Request-Timeout-Ms": "y", "REQUEST-TIMEOUT-MS": "z"}})
		var pe *wire.ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("err = %v, want a *wire.ParseError", err)
		}
		if i == 0 {
			first = pe.Value
		} else if pe.Value != first {
			t.Fatalf("refusal names %q, then %q: it depends on map order", first, pe.Value)
		}
	}
}

func TestConsumerInvalidPolicy(t *testing.T) {
	t.Parallel()
	c := &amqpbudget.Consumer{Policy: &wire.Policy{Max: -time.Second}, Handler: func(context.Context, amqp.Delivery) error { return nil }}
	a := &acks{}
	err := c.Handle(context.Background(), amqp.Delivery{Acknowledger: a})
	if !errors.Is(err, budget.ErrMisconfigured) || !errors.Is(err, wire.ErrInvalidPolicy) || a.acked+a.rejected != 0 {
		t.Errorf("err %v, acks %+v; want ErrMisconfigured and ErrInvalidPolicy, the message untouched", err, a)
	}
}

// TestConsumerStopping: a message handled once the consumer is stopping goes back to
// the queue, never rejected for the shutdown.
func TestConsumerStopping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handler func(stop context.CancelFunc) func(context.Context, amqp.Delivery) error
		ran     bool
		acked   bool
	}{
		{name: "received after the stop: not handled", ran: false,
			handler: func(context.CancelFunc) func(context.Context, amqp.Delivery) error { return nil }},
		{name: "in flight, the handler gives up", ran: true, handler: func(stop context.CancelFunc) func(context.Context, amqp.Delivery) error {
			return func(ctx context.Context, _ amqp.Delivery) error { stop(); <-ctx.Done(); return ctx.Err() }
		}},
		{name: "in flight, the handler fails otherwise", ran: true, handler: func(stop context.CancelFunc) func(context.Context, amqp.Delivery) error {
			return func(context.Context, amqp.Delivery) error { stop(); return errors.New("connection reset") }
		}},
		{name: "in flight, the handler finishes", ran: true, acked: true, handler: func(stop context.CancelFunc) func(context.Context, amqp.Delivery) error {
			return func(context.Context, amqp.Delivery) error { stop(); return nil }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			ran := false
			h := tc.handler(stop)
			c := &amqpbudget.Consumer{Handler: func(ctx context.Context, d amqp.Delivery) error { ran = true; return h(ctx, d) }}
			if !tc.ran {
				stop()
			}
			a := &acks{}
			_ = c.Handle(ctx, amqp.Delivery{Acknowledger: a, Headers: amqp.Table{"Request-Timeout-Ms": "60000"}})
			st := c.Stats()
			if ran != tc.ran {
				t.Errorf("handler ran %v, want %v", ran, tc.ran)
			}
			if tc.acked {
				if a.acked != 1 || st.Handled != 1 || st.Returned != 0 {
					t.Errorf("acked %d, stats %+v; want acked and handled", a.acked, st)
				}
				return
			}
			if a.rejected != 1 || !a.requeued || st.Returned != 1 || st.Failed != 0 || st.Handled != 0 {
				t.Errorf("rejected %d (requeue %v), stats %+v; want returned to the queue", a.rejected, a.requeued, st)
			}
		})
	}
}

// unixMs is a Request-Deadline value for t.
func unixMs(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
