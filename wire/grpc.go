package wire

import (
	"strconv"
	"time"
)

// grpc-timeout is "TimeoutValue TimeoutUnit": at most 8 ASCII digits, then one of
// H, M, S, m, u, n. The encoder picks the finest unit whose value fits in 8 digits, so
// the value loses as little as possible, and truncates, so it never grants time the
// sender does not have.

const grpcDigits = 8

// grpcUnits lists the units from finest to coarsest; AppendGRPCTimeout relies on the
// order.
var grpcUnits = [...]struct {
	letter byte
	unit   time.Duration
}{
	{'n', time.Nanosecond},
	{'u', time.Microsecond},
	{'m', time.Millisecond},
	{'S', time.Second},
	{'M', time.Minute},
	{'H', time.Hour},
}

// AppendGRPCTimeout appends the [HeaderGRPCTimeout] value for d to dst and returns the
// extended slice. It uses the finest unit in which d fits in 8 digits and rounds down:
// 1.5 s is "1500000u" and 2 minutes is "120000m". Every positive time.Duration fits
// (the largest is about 2562047 hours). When d is not
// positive it appends nothing and reports false, so that the caller refuses locally. It
// does not allocate when dst has room for 9 bytes, and is safe for concurrent use.
func AppendGRPCTimeout(dst []byte, d time.Duration) ([]byte, bool) {
	if d <= 0 {
		return dst, false
	}
	for _, u := range grpcUnits {
		if v := int64(d / u.unit); v <= 99_999_999 {
			dst = strconv.AppendInt(dst, v, 10)
			return append(dst, u.letter), true
		}
	}
	return dst, false // unreachable: maxDuration is under 10^8 hours
}

// FormatGRPCTimeout is like [AppendGRPCTimeout] but returns a string, which costs one
// allocation.
func FormatGRPCTimeout(d time.Duration) (string, bool) {
	var buf [16]byte
	b, ok := AppendGRPCTimeout(buf[:0], d)
	return string(b), ok
}

// ParseGRPCTimeout parses a [HeaderGRPCTimeout] value: 1 to 8 ASCII digits and one unit
// letter (H, M, S, m, u or n; case matters, M is minutes and m milliseconds). It returns
// ok false and a nil error when v is empty, the duration and ok true when v is valid, and
// a [*ParseError] matching [ErrMalformed] otherwise. Values beyond the largest
// time.Duration (such as "99999999H") clamp to it. It does not allocate unless v is
// malformed, and is safe for concurrent use.
func ParseGRPCTimeout(v string) (d time.Duration, ok bool, err error) {
	if v == "" {
		return 0, false, nil
	}
	d, r := parseGRPC(v)
	return durationResult(HeaderGRPCTimeout, v, d, r)
}

func parseGRPC(v string) (time.Duration, reason) {
	if len(v) > grpcDigits+1 {
		return 0, reasonTooLong
	}
	if len(v) == 0 {
		return 0, reasonNoDigits
	}
	unit, r := grpcUnit(v[len(v)-1])
	if r != reasonNone {
		return 0, r
	}
	n, r := parseDigits(v[:len(v)-1], grpcDigits)
	if r != reasonNone {
		return 0, r
	}
	return mul(n, unit), reasonNone
}

// grpcUnit returns the unit the letter c names, from the same table
// AppendGRPCTimeout writes with; a digit where the letter belongs means the unit
// is missing.
func grpcUnit(c byte) (time.Duration, reason) {
	for _, u := range grpcUnits {
		if u.letter == c {
			return u.unit, reasonNone
		}
	}
	if c-'0' <= 9 {
		return 0, reasonNoUnit
	}
	return 0, reasonBadUnit
}
