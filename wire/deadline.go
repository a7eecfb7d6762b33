package wire

import (
	"strconv"
	"strings"
	"time"
)

// Absolute headers: a wall-clock instant as decimal Unix time. Unlike the relative
// headers they depend on the sender's and receiver's clocks agreeing, which is why
// Extract uses them only when they are consistent with a relative value (see Extract).
// Parsed instants are never before the Unix epoch, since signs are rejected.

const (
	unixMillisDigits = 15 // Unix milliseconds reach 16 digits in the year 318857
	unixMicrosDigits = 19 // the most an int64 can hold; larger values are too long
	unixNanosDigits  = 19
	maxUnixMillis    = 999_999_999_999_999
)

// AppendRequestDeadline appends the [HeaderRequestDeadline] value for the deadline t to
// dst: t's Unix time in whole milliseconds, rounded down (earlier), so it never grants
// time the sender does not have. Instants after the 15-digit limit (the year 33658)
// clamp to it. It appends nothing and reports false when t is before the Unix epoch,
// which includes the zero time.Time. It does not allocate when dst has room for 15
// bytes, and is safe for concurrent use.
func AppendRequestDeadline(dst []byte, t time.Time) ([]byte, bool) {
	if t.Unix() < 0 {
		return dst, false
	}
	// Clamp by seconds first: UnixMilli is undefined far beyond the limit. The limit's
	// own second must take the exact path, or the clamp would round it up.
	ms := int64(maxUnixMillis)
	if t.Unix() <= maxUnixMillis/1000 {
		ms = min(t.UnixMilli(), maxUnixMillis)
	}
	return strconv.AppendInt(dst, ms, 10), true
}

// FormatRequestDeadline is like [AppendRequestDeadline] but returns a string, which
// costs one allocation.
func FormatRequestDeadline(t time.Time) (string, bool) {
	var buf [24]byte
	b, ok := AppendRequestDeadline(buf[:0], t)
	return string(b), ok
}

// ParseRequestDeadline parses a [HeaderRequestDeadline] value: 1 to 15 ASCII digits of
// Unix milliseconds. It returns ok false and a nil error when v is empty (the header is
// absent), the instant and ok true when v is valid, and a [*ParseError] matching
// [ErrMalformed] otherwise. The instant has no monotonic clock reading. It does not
// allocate unless v is malformed, and is safe for concurrent use.
func ParseRequestDeadline(v string) (t time.Time, ok bool, err error) {
	return instantResult(HeaderRequestDeadline, v, kindUnixMillis)
}

// ParseXRequestDeadline parses an [HeaderXRequestDeadline] value: 1 to 15 ASCII digits
// are Unix milliseconds and 16 to 19 digits are Unix microseconds (see the constant for
// why the rule is safe). Values beyond an int64 of microseconds clamp to it. Results are
// as for [ParseRequestDeadline].
func ParseXRequestDeadline(v string) (t time.Time, ok bool, err error) {
	return instantResult(HeaderXRequestDeadline, v, kindUnixMilliOrMicro)
}

// ParseL5DDeadline parses an [HeaderL5DDeadline] value and returns the deadline it
// carries. The value is Finagle's: "<timestamp> <deadline>", two numbers of 1 to 19
// ASCII digits of Unix nanoseconds separated by exactly one space, as both linkerd 1
// and Finagle write and read it. Both numbers are validated, but the timestamp (when the
// deadline was first set, on the clock of whoever set it) is not returned: it is not the
// time the request was sent, so it measures neither skew nor transit. Numbers beyond an
// int64 clamp to it (the year 2262). Results are as for [ParseRequestDeadline].
func ParseL5DDeadline(v string) (deadline time.Time, ok bool, err error) {
	return instantResult(HeaderL5DDeadline, v, kindNanoPair)
}

// ParseFinagleDeadline parses a [HeaderFinagleDeadline] value, in the same form and with
// the same results as [ParseL5DDeadline].
func ParseFinagleDeadline(v string) (deadline time.Time, ok bool, err error) {
	return instantResult(HeaderFinagleDeadline, v, kindNanoPair)
}

func instantResult(header, v string, kind fieldKind) (time.Time, bool, error) {
	if v == "" {
		return time.Time{}, false, nil
	}
	t, r := parseInstant(v, kind)
	if r != reasonNone {
		return time.Time{}, false, newParseError(header, v, r)
	}
	return t, true, nil
}

// parseInstant parses one absolute value of the given kind.
func parseInstant(v string, kind fieldKind) (time.Time, reason) {
	switch kind {
	case kindUnixMillis:
		return parseUnixMillis(v)
	case kindUnixMilliOrMicro:
		return parseUnixMilliOrMicro(v)
	default:
		return parseNanoPair(v)
	}
}

func parseUnixMillis(v string) (time.Time, reason) {
	n, r := parseDigits(v, unixMillisDigits)
	if r != reasonNone {
		return time.Time{}, r
	}
	return time.UnixMilli(n), reasonNone
}

func parseUnixMilliOrMicro(v string) (time.Time, reason) {
	n, r := parseDigits(v, unixMicrosDigits)
	if r != reasonNone {
		return time.Time{}, r
	}
	if len(v) <= unixMillisDigits {
		return time.UnixMilli(n), reasonNone
	}
	return time.UnixMicro(n), reasonNone
}

func parseNanoPair(v string) (time.Time, reason) {
	if len(v) > 2*unixNanosDigits+1 {
		return time.Time{}, reasonTooLong
	}
	ts, dl, found := strings.Cut(v, " ")
	if !found || ts == "" || dl == "" {
		return time.Time{}, reasonNotPair
	}
	if _, r := parseDigits(ts, unixNanosDigits); r != reasonNone {
		return time.Time{}, r
	}
	n, r := parseDigits(dl, unixNanosDigits)
	if r != reasonNone {
		return time.Time{}, r
	}
	return time.Unix(0, n), reasonNone
}
