package wire

import "time"

// HeaderRequestMessageTimeout carries the per-message budget a client asks for on a
// stream: how long the server may take over each message, in whole milliseconds as 1
// to 10 ASCII digits, written as [HeaderRequestTimeout] is. It is not a deadline
// source: [Extract] does not read it, and a call's deadline is unchanged by it. gRPC
// metadata uses the same name in lower case, "request-message-timeout-ms". A server
// reads it when its policy trusts [SourceRequestTimeout], since it is this library's own
// relative value, and never grants more than its own per-message budget or the policy's
// Max. The grpcbudget and connectbudget adapters send and read it.
const HeaderRequestMessageTimeout = "Request-Message-Timeout-Ms"

// requestMessageTimeoutDigits is the longest [HeaderRequestMessageTimeout] value.
const requestMessageTimeoutDigits = 10

// AppendRequestMessageTimeout appends the [HeaderRequestMessageTimeout] value for d, a
// per-message budget, to dst and returns the extended slice: whole milliseconds rounded
// down, clamped to ten digits. It appends nothing and reports false when d is under one
// millisecond, which cannot be sent: a per-message budget is positive. It does not
// allocate when dst has room for 10 bytes, and is safe for concurrent use.
func AppendRequestMessageTimeout(dst []byte, d time.Duration) ([]byte, bool) {
	return appendMillis(dst, d, requestMessageTimeoutDigits)
}

// FormatRequestMessageTimeout is like [AppendRequestMessageTimeout] but returns a
// string, which costs one allocation. It returns "", false when d is under one
// millisecond.
func FormatRequestMessageTimeout(d time.Duration) (string, bool) {
	var buf [24]byte
	b, ok := AppendRequestMessageTimeout(buf[:0], d)
	return string(b), ok
}

// ParseRequestMessageTimeout parses a [HeaderRequestMessageTimeout] value: 1 to 10
// ASCII digits of milliseconds, not zero. It returns ok false and a nil error when v is
// empty (the header is absent), the budget and ok true when v is valid, and a
// [*ParseError] matching [ErrMalformed] and naming [HeaderRequestMessageTimeout]
// otherwise; unlike [ParseRequestTimeout], "0" is malformed, since no sender writes a
// per-message budget of nothing. It does not allocate unless v is malformed, and is
// safe for concurrent use.
func ParseRequestMessageTimeout(v string) (d time.Duration, ok bool, err error) {
	if v == "" {
		return 0, false, nil
	}
	d, r := parseMillis(v, requestMessageTimeoutDigits)
	if r == reasonNone && d == 0 {
		r = reasonZeroBudget
	}
	return durationResult(HeaderRequestMessageTimeout, v, d, r)
}
