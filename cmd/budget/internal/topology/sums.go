package topology

import "time"

// MaxSum is the largest time a file may add up to: the worst case of
// a service's calls made one after another (every attempt to its
// timeout, every backoff and fallback), or a service's p99 with its
// callees'. About 50 years; it keeps every sum a consumer makes, even
// tripled, within int64 nanoseconds.
const MaxSum = 50 * 365 * 24 * time.Hour

// sumText is MaxSum in words.
const sumText = "50 years"

const sequenceTooLong = "service %s: its calls one after another can take more than %s in the worst case (every attempt to its timeout, every backoff and fallback)"

// WorstCall is the longest c can hold its caller when the caller is given
// the time given: every attempt running to its timeout (given, for a call
// without one), the backoffs between them, then every fallback to its
// timeout or, for a local one, its p99. Within the bounds of a topology's
// values it does not overflow.
func WorstCall(c Call, given time.Duration) time.Duration {
	t := c.Timeout
	if t == 0 {
		t = given
	}
	d := time.Duration(c.Retries+1)*t + time.Duration(c.Retries)*c.Backoff
	for _, f := range c.Fallback {
		switch {
		case f.Local != "":
			d += f.Latency.P99
		case f.Timeout != 0:
			d += f.Timeout
		default:
			d += given
		}
	}
	return d
}

// addSum returns a+b, or false when that passes MaxSum. Both are at least
// zero and at most MaxSum, so the addition itself cannot overflow.
func addSum(a, b time.Duration) (time.Duration, bool) {
	if b > MaxSum || a > MaxSum-b {
		return MaxSum, false
	}
	return a + b, true
}
