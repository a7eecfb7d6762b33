package amqpbudget

import (
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget/wire"
)

// headerValue returns the table's value for name as a string, finding the
// key in any case and accepting the integer types other publishers use.
func headerValue(t amqp.Table, name string) string {
	v, ok := t[name]
	if !ok {
		for k, kv := range t {
			if len(k) == len(name) && equalFold(k, name) {
				v, ok = kv, true
				break
			}
		}
	}
	if !ok {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int:
		return strconv.Itoa(x)
	}
	return "?" // present but of a type no budget header has: malformed
}

func equalFold(a, b string) bool {
	for i := 0; i < len(a); i++ {
		ca, cb := a[i]|0x20, b[i]|0x20
		if ca != cb {
			return false
		}
	}
	return true
}

// deadline is what a message says about its deadline.
type deadline struct {
	at        time.Time // the deadline on the consumer's clock
	sent      time.Time // when the message was sent, on the consumer's clock; zero when unknown
	ok        bool      // whether the message carries a usable budget
	absolute  bool      // whether Request-Deadline set it
	skew      bool      // an absolute value was ignored: the clocks disagree
	malformed bool      // a budget header could not be parsed
}

// deadlineOf reads d's budget as of now (see the package documentation).
func deadlineOf(d amqp.Delivery, now time.Time, skew time.Duration) deadline {
	var r deadline
	rel, relOK, err := wire.ParseRequestTimeout(headerValue(d.Headers, wire.HeaderRequestTimeout))
	r.malformed = err != nil
	abs, absOK, err := wire.ParseRequestDeadline(headerValue(d.Headers, wire.HeaderRequestDeadline))
	r.malformed = r.malformed || err != nil
	sent, hasSent := d.Timestamp, !d.Timestamp.IsZero()
	if absOK {
		// The clocks agree when the message was not sent in our future, and
		// the publisher's own values agree with each other (the timestamp
		// has whole seconds, hence the second of slack).
		agree := !hasSent || !sent.After(now.Add(skew))
		if agree && relOK && hasSent {
			implied := sent.Add(rel)
			agree = !abs.Before(implied.Add(-skew)) && !abs.After(implied.Add(time.Second+skew))
		}
		if agree {
			r = deadline{at: now.Add(abs.Sub(now)), ok: true, absolute: true, malformed: r.malformed}
			if relOK {
				r.sent = now.Add(abs.Add(-rel).Sub(now)) // millisecond precision
			}
			return r
		}
		r.skew = true
	}
	switch {
	case relOK && hasSent && !r.skew:
		r.at, r.ok, r.sent = now.Add(sent.Add(rel).Sub(now)), true, now.Add(sent.Sub(now))
	case relOK:
		r.at, r.ok = now.Add(rel), true
	}
	return r
}
