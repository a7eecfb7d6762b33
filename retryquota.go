package budget

import (
	"sync/atomic"
	"time"
)

// Defaults of a zero [RetryQuota]: the values Finagle and Linkerd ship with.
const (
	defaultRetryTTL          = 10 * time.Second
	defaultRetryMinPerSecond = 10
	defaultRetryRatio        = 0.2
)

const (
	retrySlots  = 10   // the TTL is counted in this many slices
	retryScale  = 1000 // a retry costs retryScale units; a request deposits Ratio × retryScale
	epochBits   = 24   // slice number, modulo 2^24, in the high bits of a slot
	countBits   = 64 - epochBits
	epochMask   = 1<<epochBits - 1
	countMask   = 1<<countBits - 1
	countSignSh = 64 - countBits
)

// RetryQuota limits the retries of one client to a fraction of its requests,
// so that an outage of a dependency cannot multiply the load on it: with the
// defaults, at most 20 % of the requests of the last 10 s may be retried, plus
// 10 retries per second whatever the traffic, so a client with little traffic
// can still retry. This is what Finagle and Linkerd call a retry budget (the
// name here keeps "budget" for time): a token bucket in which every request
// deposits Ratio of a token, every retry (or hedge) withdraws a whole one, and
// tokens older than TTL no longer count.
//
// Share one RetryQuota among all the calls of a client (set it as
// [Retry.Quota] or [Hedge.Quota]). The zero value is ready to use with the
// defaults. Set the fields before first use. A RetryQuota must not be copied
// after first use. It is safe for concurrent use and lock-free: the balance is
// kept in ten time slices, each one atomic word holding its slice number and
// its count, so Deposit costs one compare-and-swap and Withdraw reads the ten
// words. Nothing allocates.
//
// Its methods take the time as a parameter, so they are pure computations over
// the deposits made so far; [Retry] and [Hedge] pass time.Now(). A nil
// *RetryQuota is no quota: Withdraw always succeeds and nothing is counted.
type RetryQuota struct {
	// TTL is how long a deposit or a withdrawal counts. Zero means 10 s.
	TTL time.Duration
	// MinPerSecond is the floor: this many retries per second are allowed
	// on top of the ratio, whatever the traffic. Zero means
	// 10; a negative value means no floor.
	MinPerSecond float64
	// Ratio is the fraction of requests that may be retried, such as 0.2
	// for 20 %. Zero means 0.2; a negative value means none
	// (only the floor).
	Ratio float64

	slots      [retrySlots]atomic.Uint64
	suppressed atomic.Int64
}

func (b *RetryQuota) slice() int64 {
	ttl := b.TTL
	if ttl <= 0 {
		ttl = defaultRetryTTL
	}
	return max(int64(ttl)/retrySlots, 1)
}

func (b *RetryQuota) deposit() int64 {
	return int64(setting(b.Ratio, defaultRetryRatio) * retryScale)
}

// reserve is the floor, in units: MinPerSecond over the whole TTL.
func (b *RetryQuota) reserve() int64 {
	per := setting(b.MinPerSecond, defaultRetryMinPerSecond)
	return int64(per * float64(b.slice()*retrySlots) / float64(time.Second) * retryScale)
}

// setting reads Ratio or MinPerSecond as their docs say: zero is the default
// def, a negative value is zero (off).
func setting(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return max(v, 0)
}

// add adds delta units to the slice holding now, resetting the slice when it
// last held an older one.
func (b *RetryQuota) add(now time.Time, delta int64) {
	ep := now.UnixNano() / b.slice()
	s := &b.slots[uint64(ep)%retrySlots]
	e := uint64(ep) & epochMask
	for {
		old := s.Load()
		var c int64
		if old>>countBits == e {
			c = int64(old<<countSignSh) >> countSignSh
		}
		next := e<<countBits | uint64(c+delta)&countMask
		if s.CompareAndSwap(old, next) {
			return
		}
	}
}

// units returns the balance in units: the floor plus the deposits less the
// withdrawals of the slices within TTL of now.
func (b *RetryQuota) units(now time.Time) int64 {
	ep := uint64(now.UnixNano() / b.slice())
	sum := b.reserve()
	for i := range b.slots {
		w := b.slots[i].Load()
		if age := (ep - w>>countBits) & epochMask; age < retrySlots {
			sum += int64(w<<countSignSh) >> countSignSh
		}
	}
	return sum
}

// Deposit records a request made at now: it adds Ratio of a retry to the
// balance. [Retry] and [Hedge] deposit once per call, before the first
// attempt.
func (b *RetryQuota) Deposit(now time.Time) {
	if b == nil {
		return // a nil quota is no quota
	}
	if d := b.deposit(); d > 0 {
		b.add(now, d)
	}
}

// Withdraw takes one retry from the balance at now and reports whether there
// was one to take. A refused withdrawal is counted as a suppressed retry (see
// [RetryQuota.Suppressed]). Concurrent withdrawals never overdraw the
// balance; when several race for the last retry, more than one may be
// refused.
func (b *RetryQuota) Withdraw(now time.Time) bool {
	if b == nil {
		return true // a nil quota is no quota: every retry may go
	}
	b.add(now, -retryScale)
	if b.units(now) >= 0 {
		return true
	}
	b.add(now, retryScale)
	b.suppressed.Add(1)
	return false
}

// Balance returns how many retries the quota would allow at now.
func (b *RetryQuota) Balance(now time.Time) int {
	if b == nil {
		return 0
	}
	return int(max(b.units(now), 0) / retryScale)
}

// Suppressed returns how many retries (and hedges) the quota has refused
// since it was created.
func (b *RetryQuota) Suppressed() int64 {
	if b == nil {
		return 0
	}
	return b.suppressed.Load()
}
