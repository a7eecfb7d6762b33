package wire

import (
	"math"
	"strconv"
	"time"
)

// maxDuration is the largest time.Duration; overflowing values clamp to it.
const maxDuration = time.Duration(math.MaxInt64)

// parseDigits reads s as 1 to maxDigits ASCII digits and nothing else: no sign, no
// space, no exponent, no digit from another script. Leading zeros count toward the
// limit. The result saturates at math.MaxInt64; maxDigits must be at most 19, so the
// accumulator cannot overflow a uint64. The length is checked first, so an oversized
// value costs O(1).
func parseDigits(s string, maxDigits int) (int64, reason) {
	if len(s) == 0 {
		return 0, reasonNoDigits
	}
	if len(s) > maxDigits {
		return 0, reasonTooLong
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, reasonNotDigit
		}
		n = n*10 + uint64(c)
	}
	if n > math.MaxInt64 {
		return math.MaxInt64, reasonNone
	}
	return int64(n), reasonNone
}

// mul returns n*unit, clamped to maxDuration. n and unit are not negative.
func mul(n int64, unit time.Duration) time.Duration {
	if n > int64(maxDuration/unit) {
		return maxDuration
	}
	return time.Duration(n) * unit
}

// appendMillis appends d in whole milliseconds, rounded down and clamped to maxDigits
// nines. It reports false, appending nothing, when d is under one millisecond: such a
// value would be written as 0, which asks for the impossible (or, to Envoy, for no
// timeout at all).
func appendMillis(dst []byte, d time.Duration, maxDigits int) ([]byte, bool) {
	ms := int64(d / time.Millisecond)
	if ms < 1 {
		return dst, false
	}
	if limit := nines(maxDigits); ms > limit {
		ms = limit
	}
	return strconv.AppendInt(dst, ms, 10), true
}

// nines returns the largest number with n decimal digits, for n from 1 to 18.
func nines(n int) int64 {
	v := int64(9)
	for range n - 1 {
		v = v*10 + 9
	}
	return v
}

// trimOWS removes the optional whitespace (spaces and horizontal tabs) that HTTP allows
// around list elements.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
