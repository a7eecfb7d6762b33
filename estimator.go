package budget

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Bucket layout: log-linear over nanoseconds. Bucket 0 holds everything below
// 2^10 ns (about 1 µs, including zero and negative durations); then 30 octaves
// from 2^10 ns to 2^40 ns (about 18 min), each split into 16 equal sub-buckets,
// so a bucket's midpoint is within 1/32 (3.1 %) of any value in it; the last
// bucket holds everything longer. Log-linear buckets were chosen over exact
// powers of 1.1 because the index is a bit-length and a shift, with no call to
// math.Log on the recording path.
const (
	minExp     = 10
	maxExp     = 40
	subBits    = 4
	subBuckets = 1 << subBits
	nBuckets   = 2 + (maxExp-minExp)*subBuckets
)

// defaultWindow is the length of each of the two rotating windows of an
// [Estimator] whose Window is zero.
const defaultWindow = time.Second

func bucketOf(d time.Duration) int {
	if d < 1<<minExp {
		return 0
	}
	e := bits.Len64(uint64(d)) - 1
	if e >= maxExp {
		return nBuckets - 1
	}
	sub := int(uint64(d)>>(e-subBits)) & (subBuckets - 1)
	return 1 + (e-minExp)*subBuckets + sub
}

// bucketBounds returns the half-open range [lo, hi) of bucket i.
func bucketBounds(i int) (lo, hi time.Duration) {
	switch {
	case i <= 0:
		return 0, 1 << minExp
	case i >= nBuckets-1:
		return 1 << maxExp, math.MaxInt64
	}
	e := minExp + (i-1)/subBuckets
	sub := (i - 1) % subBuckets
	return time.Duration(subBuckets+sub) << (e - subBits), time.Duration(subBuckets+sub+1) << (e - subBits)
}

type window struct {
	epoch    atomic.Int64
	counts   [nBuckets]atomic.Uint32 // completed samples
	censored [nBuckets]atomic.Uint32 // attempts that timed out: they took at least this long
}

// Estimator is a streaming, time-decayed latency distribution. It keeps two
// rotating windows of fixed log-spaced buckets (about 1 µs to 18 min, within
// 3.1 % relative error) with atomic counters: recording takes no lock and
// allocates nothing, and a sample stops counting two windows after it was
// recorded, so the estimate follows a drift in latency.
//
// Timed-out attempts are recorded as censored samples (the call took at least
// that long) and the distribution is estimated with the Kaplan–Meier product
// limit, so slow calls that were cut short push the estimate up instead of
// vanishing from it.
//
// The zero value is ready to use with one-second windows. An Estimator must not be
// copied after first use. It is safe for concurrent use.
type Estimator struct {
	// Window is the length of each of the two rotating windows. The
	// estimate covers the last window to two windows of samples, the older
	// window's weight fading out as the current window fills (a sliding
	// window), so a one-second window turns the estimate about a second
	// after a dependency slows down: as fast as a circuit breaker counting
	// failures over a second. Zero means one second. Set it before first use
	// and do not change it afterwards.
	Window time.Duration

	slots      [2]window
	snap       atomic.Pointer[Distribution]
	refreshing atomic.Bool
	dirty      atomic.Bool // a sample arrived since the snapshot was taken
}

func (e *Estimator) window() int64 {
	if e.Window > 0 {
		return int64(e.Window)
	}
	return int64(defaultWindow)
}

// Record adds a completed call that took d, as of now.
func (e *Estimator) Record(d time.Duration) { e.record(time.Now(), d, false) }

// RecordAt adds a completed call that took d and ended at now.
func (e *Estimator) RecordAt(now time.Time, d time.Duration) { e.record(now, d, false) }

// RecordCensored adds a call that was cut off after d without completing: it
// would have taken at least d.
func (e *Estimator) RecordCensored(d time.Duration) { e.record(time.Now(), d, true) }

// RecordCensoredAt is RecordCensored for a call cut off at now.
func (e *Estimator) RecordCensoredAt(now time.Time, d time.Duration) { e.record(now, d, true) }

func (e *Estimator) record(now time.Time, d time.Duration, censored bool) {
	ep := now.UnixNano() / e.window()
	slot := &e.slots[ep&1]
	if cur := slot.epoch.Load(); cur != ep && !e.rotate(slot, cur, ep) {
		return // a sample older than both windows
	}
	i := bucketOf(d)
	if censored {
		slot.censored[i].Add(1)
	} else {
		slot.counts[i].Add(1)
	}
	// A load first: under steady recording the flag is already set, and a
	// plain load keeps the cache line shared between cores.
	if !e.dirty.Load() {
		e.dirty.Store(true)
	}
}

// rotate moves slot to epoch ep, clearing it, and reports whether the slot now
// holds ep. Samples recorded concurrently with the clearing may be lost; the
// estimate tolerates that.
func (e *Estimator) rotate(slot *window, cur, ep int64) bool {
	if cur > ep {
		return false
	}
	if slot.epoch.CompareAndSwap(cur, ep) {
		for i := range slot.counts {
			slot.counts[i].Store(0)
			slot.censored[i].Store(0)
		}
		return true
	}
	return slot.epoch.Load() == ep
}

// Reset forgets every sample. An [Op] resets its estimator when probes show a
// dependency has recovered, so a stale slow estimate stops refusing calls.
func (e *Estimator) Reset() {
	for s := range e.slots {
		e.slots[s].epoch.Store(math.MinInt64)
		for i := range e.slots[s].counts {
			e.slots[s].counts[i].Store(0)
			e.slots[s].censored[i].Store(0)
		}
	}
	e.snap.Store(nil)
}

// Distribution returns the estimated distribution as of now. The result is a
// cached snapshot, recomputed when it is older than 1/64 of a window (about
// 156 ms with the default window), or older than 1/1000 of a window (10 ms)
// when samples have arrived since it was taken; in between the cached
// snapshot is returned without allocating. Refreshing scans the buckets once
// (a few microseconds and one allocation).
func (e *Estimator) Distribution(now time.Time) *Distribution {
	snap := e.snap.Load()
	if snap != nil && !now.Before(snap.at) && now.Before(snap.hardUntil) &&
		(now.Before(snap.softUntil) || !e.dirty.Load()) {
		return snap
	}
	if !e.refreshing.CompareAndSwap(false, true) {
		if snap != nil {
			return snap // another goroutine is refreshing
		}
		return e.compute(now)
	}
	e.dirty.Store(false)
	fresh := e.compute(now)
	e.snap.Store(fresh)
	e.refreshing.Store(false)
	return fresh
}

func (e *Estimator) compute(now time.Time) *Distribution {
	w := e.window()
	ep := now.UnixNano() / w
	d := &Distribution{at: now, softUntil: now.Add(time.Duration(w / 1000))}
	// A snapshot expires after 1/64 of a window, and when the window turns
	// (the oldest samples stop counting), whichever comes first.
	d.hardUntil = now.Add(min(time.Duration(w/64), time.Duration((ep+1)*w-now.UnixNano())))
	// The previous window counts less as the current one fills: a sliding
	// window of one window's length, approximated from two fixed ones.
	prevWeight := 1 - float64(now.UnixNano()-ep*w)/float64(w)
	var u, c [nBuckets]float64
	for s := range e.slots {
		slot := &e.slots[s]
		weight := 1.0
		switch slot.epoch.Load() {
		case ep:
		case ep - 1:
			weight = prevWeight
		default:
			continue
		}
		for i := range u {
			u[i] += weight * float64(slot.counts[i].Load())
			c[i] += weight * float64(slot.censored[i].Load())
		}
	}
	var atRisk, censored float64
	for i := range u {
		atRisk += u[i] + c[i]
		censored += c[i]
		if u[i]+c[i] > 0 {
			d.top = i
		}
	}
	d.n, d.censored = int(math.Round(atRisk)), int(math.Round(censored))
	// Kaplan–Meier: censored samples stay at risk through their own bucket.
	surv := 1.0
	for i := range u {
		if atRisk > 1e-9 && u[i] > 0 {
			surv *= max(0, 1-u[i]/atRisk)
		}
		d.cdf[i] = 1 - surv
		atRisk -= u[i] + c[i]
	}
	d.p50, _ = d.quantile(0.5)
	d.p99, _ = d.quantile(0.99)
	return d
}

// Distribution is an immutable snapshot of an [Estimator]. Its methods are
// safe for concurrent use and allocate nothing.
type Distribution struct {
	at                   time.Time
	softUntil, hardUntil time.Time
	n                    int
	censored             int
	p50, p99             time.Duration
	top                  int // highest bucket holding any sample
	cached               atomic.Pointer[quantileMemo]
	cdf                  [nBuckets]float64 // P(latency < upper bound of bucket i)
}

// Count returns the number of samples in the snapshot, censored ones
// included, the older window's weighted by how much of it the sliding window
// still covers (rounded to a whole number).
func (d *Distribution) Count() int { return d.n }

// Censored returns how many of the samples were cut off (timed out), weighted
// like Count.
func (d *Distribution) Censored() int { return d.censored }

// CDF returns the estimated probability that a call finishes within t,
// interpolating linearly inside a bucket. It is 0 with no samples.
func (d *Distribution) CDF(t time.Duration) float64 {
	if d.n == 0 || t <= 0 {
		return 0
	}
	i := bucketOf(t)
	lo, hi := bucketBounds(i)
	below := 0.0
	if i > 0 {
		below = d.cdf[i-1]
	}
	if i == nBuckets-1 {
		return d.cdf[i]
	}
	frac := float64(t-lo) / float64(hi-lo)
	return below + (d.cdf[i]-below)*frac
}

// quantileMemo remembers the last quantile asked of a snapshot: an op asks
// for the same one (its threshold) on every refusal.
type quantileMemo struct {
	q  float64
	d  time.Duration
	ok bool
}

// Quantile returns the duration within which a fraction q of calls finish.
// The boolean is false when there are no samples, or when q lies beyond what
// the samples show because too many of them were cut off (the calls take
// longer than anything observed); the duration is then the longest bound seen.
// q is clamped to [0, 1].
// The last answer is remembered, so asking for the same q again costs a load.
func (d *Distribution) Quantile(q float64) (time.Duration, bool) {
	if m := d.cached.Load(); m != nil && m.q == q {
		return m.d, m.ok
	}
	v, ok := d.quantile(q)
	d.cached.Store(&quantileMemo{q, v, ok})
	return v, ok
}

func (d *Distribution) quantile(q float64) (time.Duration, bool) {
	if d.n == 0 || q != q {
		return 0, false
	}
	q = min(max(q, 0), 1)
	for i := range d.cdf {
		below := 0.0
		if i > 0 {
			below = d.cdf[i-1]
		}
		if d.cdf[i] >= q && d.cdf[i] > below {
			lo, hi := bucketBounds(i)
			if i == nBuckets-1 {
				return lo, true
			}
			frac := (q - below) / (d.cdf[i] - below)
			return lo + time.Duration(frac*float64(hi-lo)), true
		}
	}
	lo, hi := bucketBounds(d.top)
	if d.top == nBuckets-1 {
		return lo, false
	}
	return hi, false
}

// Median returns the 0.5 quantile, precomputed when the snapshot was taken.
func (d *Distribution) Median() time.Duration { return d.p50 }

// P99 returns the 0.99 quantile, precomputed when the snapshot was taken.
func (d *Distribution) P99() time.Duration { return d.p99 }
