package wire

import "time"

// Relative headers in whole milliseconds. They share one grammar, ASCII digits only, and
// differ in how many digits they accept: 10 where a specification says so (this
// library's header and Connect's), 15 for headers with no stated limit (Envoy's and
// YARPC's), which covers any timeout a proxy configuration can express. Parsed values
// that overflow a time.Duration (more than about 292 years) clamp to the largest one.

const (
	requestTimeoutDigits = 10
	connectTimeoutDigits = 10
	foreignMillisDigits  = 15
)

// AppendRequestTimeout appends the [HeaderRequestTimeout] value for d, the time left, to
// dst and returns the extended slice. The value is whole milliseconds rounded down, so it
// never grants time the sender does not have, and clamped to 9999999999 (ten digits,
// about 115 days). When d is under one millisecond it appends nothing and reports false:
// the caller should refuse the call locally rather than send a request with no time. It
// does not allocate when dst has room for 10 bytes, and is safe for concurrent use.
func AppendRequestTimeout(dst []byte, d time.Duration) ([]byte, bool) {
	return appendMillis(dst, d, requestTimeoutDigits)
}

// FormatRequestTimeout is like [AppendRequestTimeout] but returns a string, which costs
// one allocation. It returns "", false when d is under one millisecond.
func FormatRequestTimeout(d time.Duration) (string, bool) {
	var buf [24]byte
	b, ok := AppendRequestTimeout(buf[:0], d)
	return string(b), ok
}

// ParseRequestTimeout parses a [HeaderRequestTimeout] value: 1 to 10 ASCII digits of
// milliseconds. It returns ok false and a nil error when v is empty (the header is
// absent), the duration and ok true when v is valid, and a [*ParseError] matching
// [ErrMalformed] otherwise. "0" is valid and means no time is left. It does not allocate
// unless v is malformed, and is safe for concurrent use.
func ParseRequestTimeout(v string) (d time.Duration, ok bool, err error) {
	return relative(HeaderRequestTimeout, v, requestTimeoutDigits)
}

// AppendConnectTimeout appends the [HeaderConnectTimeout] value for d to dst, with the
// same rules as [AppendRequestTimeout]: whole milliseconds rounded down, 1 to 10 digits,
// false instead of "0". The Connect protocol requires a positive value.
func AppendConnectTimeout(dst []byte, d time.Duration) ([]byte, bool) {
	return appendMillis(dst, d, connectTimeoutDigits)
}

// FormatConnectTimeout is like [AppendConnectTimeout] but returns a string, which costs
// one allocation.
func FormatConnectTimeout(d time.Duration) (string, bool) {
	var buf [24]byte
	b, ok := AppendConnectTimeout(buf[:0], d)
	return string(b), ok
}

// ParseConnectTimeout parses a [HeaderConnectTimeout] value: 1 to 10 ASCII digits of
// milliseconds. Results are as for [ParseRequestTimeout].
func ParseConnectTimeout(v string) (d time.Duration, ok bool, err error) {
	return relative(HeaderConnectTimeout, v, connectTimeoutDigits)
}

// ParseEnvoyExpectedTimeout parses a [HeaderEnvoyExpectedTimeout] value: 1 to 15 ASCII
// digits of milliseconds. Results are as for [ParseRequestTimeout].
func ParseEnvoyExpectedTimeout(v string) (d time.Duration, ok bool, err error) {
	return relative(HeaderEnvoyExpectedTimeout, v, foreignMillisDigits)
}

// AppendEnvoyUpstreamTimeout appends the [HeaderEnvoyUpstreamTimeout] value for d to
// dst: whole milliseconds rounded down, clamped to ten digits. It reports false instead
// of writing "0", which Envoy would read as "no timeout at all".
func AppendEnvoyUpstreamTimeout(dst []byte, d time.Duration) ([]byte, bool) {
	return appendMillis(dst, d, requestTimeoutDigits)
}

// FormatEnvoyUpstreamTimeout is like [AppendEnvoyUpstreamTimeout] but returns a string,
// which costs one allocation.
func FormatEnvoyUpstreamTimeout(d time.Duration) (string, bool) {
	var buf [24]byte
	b, ok := AppendEnvoyUpstreamTimeout(buf[:0], d)
	return string(b), ok
}

// ParseEnvoyUpstreamTimeout parses a [HeaderEnvoyUpstreamTimeout] value: 1 to 15 ASCII
// digits of milliseconds, with results as for [ParseRequestTimeout]. A valid "0" is
// returned as 0, which to Envoy means "no timeout", not "no time left"; this is why the
// header is never read as an inbound source.
func ParseEnvoyUpstreamTimeout(v string) (d time.Duration, ok bool, err error) {
	return relative(HeaderEnvoyUpstreamTimeout, v, foreignMillisDigits)
}

// ParseContextTTL parses a [HeaderContextTTL] value: 1 to 15 ASCII digits of
// milliseconds. Results are as for [ParseRequestTimeout].
func ParseContextTTL(v string) (d time.Duration, ok bool, err error) {
	return relative(HeaderContextTTL, v, foreignMillisDigits)
}

// parseMillis parses whole milliseconds of at most maxDigits digits.
func parseMillis(v string, maxDigits int) (time.Duration, reason) {
	n, r := parseDigits(v, maxDigits)
	if r != reasonNone {
		return 0, r
	}
	return mul(n, time.Millisecond), reasonNone
}

// relative turns a milliseconds parse into the three-way result of the exported parsers.
func relative(header, v string, maxDigits int) (time.Duration, bool, error) {
	if v == "" {
		return 0, false, nil
	}
	d, r := parseMillis(v, maxDigits)
	return durationResult(header, v, d, r)
}

func durationResult(header, v string, d time.Duration, r reason) (time.Duration, bool, error) {
	if r != reasonNone {
		return 0, false, newParseError(header, v, r)
	}
	return d, true, nil
}

// ParseRequestAttempt parses a [HeaderRequestAttempt] value: 1 to 3 ASCII
// digits, not zero. An empty value is absent (ok false, nil error); anything
// else is a [*ParseError]. It does not allocate unless it returns an error.
func ParseRequestAttempt(v string) (n int, ok bool, err error) {
	if v == "" {
		return 0, false, nil
	}
	r := reasonNone
	switch {
	case len(v) > 3:
		r = reasonTooLong
	default:
		for i := 0; i < len(v); i++ {
			if v[i] < '0' || v[i] > '9' {
				r = reasonNotDigit
				break
			}
			n = n*10 + int(v[i]-'0')
		}
		if r == reasonNone && n == 0 {
			r = reasonZeroAttempt
		}
	}
	if r != reasonNone {
		return 0, false, newParseError(HeaderRequestAttempt, v, r)
	}
	return n, true, nil
}
