package amqpbudget

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/timebudget/budget/wire"
)

// headers are a message's budget headers, read as a [wire.Header] so that
// the inbound policy reads a message as it reads gRPC metadata or an HTTP
// request.
//
// AMQP header names are case-sensitive and publishers spell them as they
// like, so every key equal to a budget header's name in ASCII case counts,
// as repeated fields of an HTTP request do: the strictest usable value wins
// and every malformed one is counted. The spellings of one header are read
// in the sorted order of their keys, so the outcome never depends on the
// order in which a map is iterated.
//
// Values of the integer types other publishers use are read as decimal
// numbers (a negative one is then malformed, for want of a sign in the
// grammar); a value of any other type (a float, a boolean, a nested table)
// is malformed. Other headers are not read.
type headers struct {
	vals [maxNames][]string
	one  [maxNames]string // holds the usual single value of a header
}

// maxNames is how many headers a consumer reads: the nine inbound deadline
// sources of package wire, Request-Criticality, Budget-Probe and
// Request-Attempt. Should
// wire read more, the package panics when it loads, and every test says so.
const maxNames = 12

// headersOf reads t's budget headers. It allocates once, and once more for
// each header sent under several spellings.
func headersOf(t amqp.Table) *headers {
	h := new(headers)
	var mixed bool
	for k, v := range t {
		i := known(k)
		if i < 0 {
			continue
		}
		if h.vals[i] != nil {
			mixed = true
			continue
		}
		h.one[i] = text(v)
		h.vals[i] = h.one[i : i+1 : i+1]
	}
	if !mixed {
		return h
	}
	for i := range names { // rare: read every spelling, in the order of the keys
		var keys []string
		for k := range t {
			if known(k) == i {
				keys = append(keys, k)
			}
		}
		if len(keys) < 2 {
			continue
		}
		slices.Sort(keys)
		h.vals[i] = make([]string, len(keys))
		for j, k := range keys {
			h.vals[i][j] = text(t[k])
		}
	}
	return h
}

// Values returns the values of the header named name, lowercase.
func (h *headers) Values(name string) []string {
	for i, n := range names {
		if n == name {
			return h.vals[i]
		}
	}
	return nil
}

// names are the lowercase names of the headers a consumer reads: every
// inbound source of package wire, and Request-Attempt.
var names = func() []string {
	var n []string
	for s := wire.Sources(1); s <= wire.SourcesAll; s <<= 1 {
		if h := s.Header(); h != "" {
			n = append(n, strings.ToLower(h))
		}
	}
	n = append(n, strings.ToLower(wire.HeaderRequestAttempt))
	if len(n) > maxNames {
		panic("amqpbudget: more budget headers than maxNames")
	}
	return n
}()

// known returns the index in names of the header k spells, or -1.
func known(k string) int {
	for i, n := range names {
		if len(k) == len(n) && equalFold(k, n) {
			return i
		}
	}
	return -1
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
	}
	// The integer types AMQP tables carry, by kind: int8 to int64 and int,
	// uint8 to uint64. Named types are none of these (amqp091 decodes none).
	r := reflect.ValueOf(v)
	if !r.IsValid() || r.Type().PkgPath() != "" {
		return notText
	}
	switch r.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		return strconv.FormatInt(r.Int(), 10)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(r.Uint(), 10)
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
func sent(d amqp.Delivery, h *headers) time.Time {
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
