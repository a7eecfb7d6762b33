package amqpbudget

import (
	"slices"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget/wire"
)

// table reads a message's headers as a [wire.Header], so that the inbound
// policy reads a message as it reads an HTTP request or gRPC metadata.
//
// AMQP header names are case-sensitive and publishers spell them as they
// like, so every key equal to the asked name in ASCII case counts, as
// repeated fields of an HTTP request do: the strictest usable value wins
// and every malformed one is counted. The keys are read in sorted order, so
// the outcome never depends on the order in which a map is iterated.
//
// Values of the integer types other publishers use are read as decimal
// numbers (a negative one is then malformed, for want of a sign in the
// grammar); a value of any other type (a float, a boolean, a nested table)
// is malformed.
type table amqp.Table

// Values returns the values of every key equal to name in ASCII case.
func (t table) Values(name string) []string {
	var keys []string
	for k := range t {
		if len(k) == len(name) && equalFold(k, name) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = text(t[k])
	}
	return vals
}

// notText stands for a value of a type no budget header has. It is not a
// number, so the policy counts it as malformed, and it reads well in the
// error that quotes it.
const notText = "(not text or an integer)"

// text returns a header value as the text a budget header would carry.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case int8:
		return strconv.FormatInt(int64(x), 10)
	case int16:
		return strconv.FormatInt(int64(x), 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case uint8:
		return strconv.FormatUint(uint64(x), 10)
	case uint16:
		return strconv.FormatUint(uint64(x), 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	}
	return notText
}

// equalFold reports whether a and b, of equal length, are equal in ASCII case.
func equalFold(a, b string) bool {
	for i := 0; i < len(a); i++ {
		ca, cb := a[i], b[i]
		if 'A' <= ca && ca <= 'Z' {
			ca += 'a' - 'A'
		}
		if 'A' <= cb && cb <= 'Z' {
			cb += 'a' - 'A'
		}
		if ca != cb {
			return false
		}
	}
	return true
}

// sent returns when the message was sent, on its publisher's clock, or the
// zero time when it does not say. A message stamped by [Stamp] carries its
// deadline both ways, and their difference is the instant of the stamp to
// the millisecond; otherwise the AMQP timestamp, which has whole seconds,
// is used. Whether that instant is believable is the policy's business
// ([wire.Policy.DecideSent]): one in our future beyond the skew threshold
// adds no time.
func sent(d amqp.Delivery, h table) time.Time {
	rel, abs := h.Values("request-timeout-ms"), h.Values("request-deadline")
	if len(rel) == 1 && len(abs) == 1 {
		r, rok, _ := wire.ParseRequestTimeout(rel[0])
		a, aok, _ := wire.ParseRequestDeadline(abs[0])
		if rok && aok {
			return a.Add(-r)
		}
	}
	return d.Timestamp
}
