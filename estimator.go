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

// processStart is the origin of the monotonic offsets the estimator and the
// admission state keep: a wall clock that steps (NTP, a VM resumed, an
// operator) moves no window and no probe interval, because every time is
// turned into an offset from this reading with time.Time.Sub, which uses the
// monotonic clock when both times carry a reading, as time.Now's do.
//
// It is the last whole hour of the wall clock (UTC) before the process
// started, its monotonic reading moved back with it, so that times carrying
// no monotonic reading, such as the virtual times budget sim makes with
// time.Date and Add, fall in the same windows in every process for every
// window length that divides an hour: a seeded simulation then decides the
// same way in every run, not only within one process.
var processStart = func() time.Time {
	now := time.Now()
	return now.Add(-time.Duration(now.UnixNano() % int64(time.Hour)))
}()

// monoBase keeps offsets positive for any time after 1880, so zero can stand
// for "never" in every field that holds one (window epochs included).
const monoBase = 1 << 62

// mono returns t as nanoseconds since processStart, plus monoBase.
func mono(t time.Time) int64 { return int64(t.Sub(processStart)) + monoBase }

// floorDiv divides rounding toward minus infinity, so window numbers stay
// ordered for offsets before processStart.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

type window struct {
	epoch atomic.Int64
	// hiP1 and loInv bound the buckets holding samples, so that an estimate
	// scans those rather than all nBuckets: the highest one's index plus
	// one, and nBuckets less the lowest one's; zero while the window is
	// empty, so the zero window is empty.
	hiP1, loInv atomic.Int32
	counts      [nBuckets]atomic.Uint32 // completed samples
	censored    [nBuckets]atomic.Uint32 // attempts that timed out: they took at least this long
}

// widen makes the window's bounds cover bucket i. Under steady recording
// they already do, and it costs two loads.
func (w *window) widen(i int) {
	hi, lo := int32(i+1), int32(nBuckets-i)
	for h := w.hiP1.Load(); hi > h && !w.hiP1.CompareAndSwap(h, hi); h = w.hiP1.Load() {
	}
	for l := w.loInv.Load(); lo > l && !w.loInv.CompareAndSwap(l, lo); l = w.loInv.Load() {
	}
}

// bounds returns the lowest and highest buckets that may hold samples; hi
// is below lo when the window is empty.
func (w *window) bounds() (lo, hi int) {
	h := int(w.hiP1.Load())
	if h == 0 {
		return 0, -1
	}
	return nBuckets - int(w.loInv.Load()), h - 1
}

// clearBounds empties the window's bounds, before its counts are cleared:
// a sample recorded meanwhile either widens them afterwards or has its
// count cleared too.
func (w *window) clearBounds() {
	w.hiP1.Store(0)
	w.loInv.Store(0)
}

// recentSize is how many of the latest samples an estimator keeps beside its
// windows, for dependencies called too rarely to fill a window.
const recentSize = 64

// recentAge is how many windows the latest samples stand in for the windows
// after they were recorded (30 s with the default window): an estimate
// learned during an outage cannot govern a quiet dependency for longer,
// even where no probe ever runs.
const recentAge = 30

// defaultMinSamples is how many samples an estimate needs before it replaces
// a prior, and how many of the latest samples stand in for a window that
// holds fewer.
const defaultMinSamples = 5

// Estimator is a streaming, time-decayed latency distribution. It keeps two
// rotating windows of fixed log-spaced buckets (about 1 µs to 18 min, within
// 3.1 % relative error) with atomic counters: recording takes no lock and
// allocates nothing, and a sample stops counting two windows after it was
// recorded, so the estimate follows a drift in latency.
//
// Learning is bounded by sample count as well as time. Beside the windows
// the estimator keeps the latest samples (at most 64, recorded within the
// last 30 windows), and when
// the windows hold fewer samples than an estimate needs (5 for
// [Estimator.Distribution]; an [Op]'s MinSamples), the estimate is built
// from that many of the latest samples instead. A dependency called three
// times a second is thus learned from its last five calls, while one called
// ten thousand times a second follows a shift within a window.
//
// Timed-out attempts are recorded as censored samples (the call took at least
// that long) and the distribution is estimated with the Kaplan–Meier product
// limit, so slow calls that were cut short push the estimate up instead of
// vanishing from it. A cut-off at t says "latency > t" and nothing about
// later times: beyond the longest cut-off with no completion past it, the
// estimate is unknown (see [Distribution.Known]), never zero, so callers
// that send short deadlines cannot make the dependency look unusable to
// callers with more time.
//
// Times are turned into offsets on the monotonic clock, so a step of the
// wall clock moves no window. The zero value is ready to use with
// one-second windows. An Estimator must not be copied after first use. It
// is safe for concurrent use. A nil *Estimator records nothing and returns a
// nil Distribution.
type Estimator struct {
	// Window is the length of each of the two rotating windows. The
	// estimate covers the last window to two windows of samples, the older
	// window's weight fading out as the current window fills (a sliding
	// window), so a one-second window turns the estimate about a second
	// after a dependency slows down: as fast as a circuit breaker counting
	// failures over a second. Zero means one second. Set it before first use
	// and do not change it afterwards.
	Window time.Duration

	slots [2]window

	// recent holds the latest samples, encoded as d<<1 | censored, written
	// in turn at recentNext. While a bucket of the current window holds
	// more than recentSize samples, its further samples are not kept there:
	// the windows then hold plenty.
	recent     [recentSize]atomic.Int64
	recentAt   [recentSize]atomic.Int64 // the offset each of recent was recorded at
	recentNext atomic.Uint64

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

// Record adds a completed call that took d, as of now. It is shorthand for
// [Estimator.RecordAt] with the present time.
func (e *Estimator) Record(d time.Duration) { e.record(mono(time.Now()), d, false) }

// RecordAt adds a completed call that took d and ended at now.
func (e *Estimator) RecordAt(now time.Time, d time.Duration) { e.record(mono(now), d, false) }

// RecordCensored adds a call that was cut off after d without completing: it
// would have taken at least d. It is shorthand for
// [Estimator.RecordCensoredAt] with the present time.
func (e *Estimator) RecordCensored(d time.Duration) { e.record(mono(time.Now()), d, true) }

// RecordCensoredAt is RecordCensored for a call cut off at now.
func (e *Estimator) RecordCensoredAt(now time.Time, d time.Duration) { e.record(mono(now), d, true) }

func (e *Estimator) record(m int64, d time.Duration, censored bool) {
	if e == nil {
		return // a nil estimator records nothing
	}
	w := e.window()
	ep := floorDiv(m, w)
	slot := &e.slots[ep&1]
	if cur := slot.epoch.Load(); cur != ep && !e.rotate(slot, cur, ep) {
		return // a sample older than both windows
	}
	i := bucketOf(d)
	var n uint32
	if censored {
		n = slot.censored[i].Add(1)
	} else {
		n = slot.counts[i].Add(1)
	}
	slot.widen(i)
	// Keep the sample among the latest too, unless its bucket of the
	// current window already holds more than recentSize samples: the
	// windows then hold plenty, and the shared index is left alone.
	if n <= recentSize {
		enc := int64(max(d, 0)) &^ (1 << 62) << 1
		if censored {
			enc |= 1
		}
		k := e.recentNext.Add(1) % recentSize
		e.recentAt[k].Store(m)
		e.recent[k].Store(enc)
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
		slot.clearBounds()
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
	if e == nil {
		return
	}
	for s := range e.slots {
		e.slots[s].epoch.Store(math.MinInt64)
		e.slots[s].clearBounds()
		for i := range e.slots[s].counts {
			e.slots[s].counts[i].Store(0)
			e.slots[s].censored[i].Store(0)
		}
	}
	e.recentNext.Store(0)
	for i := range e.recent {
		e.recent[i].Store(-1)
	}
	e.snap.Store(nil)
}

// forgetCensored forgets the cut-off samples and keeps the completed ones:
// an op forgets what an outage taught it this way once probes show the
// dependency is back.
func (e *Estimator) forgetCensored() {
	for s := range e.slots {
		for i := range e.slots[s].censored {
			e.slots[s].censored[i].Store(0)
		}
	}
	for i := range e.recent {
		if enc := e.recent[i].Load(); enc >= 0 && enc&1 == 1 {
			e.recent[i].CompareAndSwap(enc, -1)
		}
	}
	e.snap.Store(nil)
}

// Distribution returns the estimated distribution as of now, built from the
// windows, or from the latest 5 samples when the windows hold fewer. The
// result is a cached snapshot, recomputed when it is older than 1/64 of a
// window (about 16 ms with the default window), or older than 1/1000 of a
// window (1 ms) when samples have arrived since it was taken; in between the
// cached snapshot is returned without allocating. Refreshing scans the
// buckets once (a few microseconds and one allocation).
func (e *Estimator) Distribution(now time.Time) *Distribution {
	if e == nil {
		return nil // a nil estimator knows nothing; a nil *Distribution is empty
	}
	return e.distribution(mono(now), defaultMinSamples)
}

// distribution is Distribution at the offset m, for an estimate that needs
// min samples.
func (e *Estimator) distribution(m int64, min int) *Distribution {
	snap := e.snap.Load()
	if snap != nil && snap.min == min && m >= snap.at && m < snap.hardUntil &&
		(m < snap.softUntil || !e.dirty.Load()) {
		return snap
	}
	if !e.refreshing.CompareAndSwap(false, true) {
		if snap != nil && snap.min == min {
			return snap // another goroutine is refreshing
		}
		return e.compute(m, min)
	}
	e.dirty.Store(false)
	fresh := e.compute(m, min)
	e.snap.Store(fresh)
	e.refreshing.Store(false)
	return fresh
}

// compute builds the distribution at offset m: from the windows when they
// hold at least min samples, from the latest min samples otherwise.
func (e *Estimator) compute(m int64, want int) *Distribution {
	w := e.window()
	ep := floorDiv(m, w)
	d := &Distribution{at: m, min: want, softUntil: m + w/1000}
	// A snapshot expires after 1/64 of a window, and when the window turns
	// (the oldest samples stop counting), whichever comes first.
	d.hardUntil = m + min64(w/64, (ep+1)*w-m)
	// The previous window counts less as the current one fills: a sliding
	// window of one window's length, approximated from two fixed ones.
	prevWeight := 1 - float64(m-ep*w)/float64(w)
	var u, c [nBuckets]float64
	total := 0.0
	lo, hi := nBuckets, -1 // the buckets holding samples, within
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
		slo, shi := slot.bounds()
		for i := slo; i <= shi; i++ {
			u[i] += weight * float64(slot.counts[i].Load())
			c[i] += weight * float64(slot.censored[i].Load())
		}
		lo, hi = min(lo, slo), max(hi, shi)
	}
	for i := lo; i <= hi; i++ {
		total += u[i] + c[i]
	}
	if total < float64(want) {
		u, c, lo, hi = e.latest(m, want)
	}
	d.fill(&u, &c, lo, hi)
	return d
}

// latest returns the latest n samples (at most recentSize) recorded within
// recentAge windows before offset m as bucket counts, and the lowest and
// highest buckets holding them (hi < lo for none).
func (e *Estimator) latest(m int64, n int) (u, c [nBuckets]float64, lo, hi int) {
	lo, hi = nBuckets, -1
	n = min(n, recentSize)
	next := e.recentNext.Load()
	oldest := m - recentAge*e.window()
	for k := range uint64(n) {
		if k >= next {
			break
		}
		enc := e.recent[(next-k)%recentSize].Load()
		if enc < 0 || e.recentAt[(next-k)%recentSize].Load() < oldest {
			continue // cleared by Reset, or too old to stand for the present
		}
		i := bucketOf(time.Duration(enc >> 1))
		lo, hi = min(lo, i), max(hi, i)
		if enc&1 == 1 {
			c[i]++
		} else {
			u[i]++
		}
	}
	return u, c, lo, hi
}

// fill computes the Kaplan–Meier estimate from completed (u) and censored (c)
// counts per bucket, all of them in buckets lo to hi, and where it stops
// being known. Outside lo to hi the counts are zero, so the estimate is
// flat there: zero below lo (as allocated), its value at hi above hi.
func (d *Distribution) fill(u, c *[nBuckets]float64, lo, hi int) {
	d.lo, d.hi = lo, hi
	var atRisk, censored float64
	lastDone, lastCut := -1, -1
	for i := lo; i <= hi; i++ {
		atRisk += u[i] + c[i]
		censored += c[i]
		if u[i]+c[i] > 0 {
			d.top = i
		}
		if u[i] > 0 {
			lastDone = i
		}
		if c[i] > 0 {
			lastCut = i
		}
	}
	d.n, d.censored = int(math.Round(atRisk)), int(math.Round(censored))
	d.horizon = math.MaxInt64
	if lastCut > lastDone {
		// Nothing finished past the longest cut-off: beyond it the data say
		// nothing.
		_, d.horizon = bucketBounds(lastCut)
	}
	// Kaplan–Meier: censored samples stay at risk through their own bucket.
	surv := 1.0
	if hi >= lo {
		d.cdf = make([]float64, hi-lo+1)
	}
	for i := lo; i <= hi; i++ {
		if atRisk > 1e-9 && u[i] > 0 {
			surv *= max(0, 1-u[i]/atRisk)
		}
		d.cdf[i-lo] = 1 - surv
		atRisk -= u[i] + c[i]
	}
	d.last = 1 - surv
	d.p50, _ = d.quantile(0.5)
	d.p99, _ = d.quantile(0.99)
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}

// Distribution is an immutable snapshot of an [Estimator]. Its methods are
// safe for concurrent use and allocate nothing. A nil *Distribution is empty:
// no samples, and every quantile unknown.
type Distribution struct {
	at, softUntil, hardUntil int64         // monotonic offsets
	min                      int           // the samples the estimate needed
	horizon                  time.Duration // CDF is known below it
	n                        int
	censored                 int
	p50, p99                 time.Duration
	top                      int // highest bucket holding any sample
	lo, hi                   int // the buckets the samples were counted in, within; hi < lo for none
	cached                   atomic.Pointer[quantileMemo]
	// cdf[i-lo] is P(latency < upper bound of bucket i) for buckets lo to
	// hi; below them it is 0, above them last. Only the buckets holding
	// samples are kept, so that a snapshot costs a few hundred bytes, not
	// the 4 KB of every bucket.
	cdf  []float64
	last float64
}

// cdfAt returns P(latency < upper bound of bucket i).
func (d *Distribution) cdfAt(i int) float64 {
	if k := i - d.lo; k >= 0 && k < len(d.cdf) {
		return d.cdf[k]
	}
	if i < d.lo {
		return 0
	}
	return d.last
}

// Count returns the number of samples in the snapshot, censored ones
// included, the older window's weighted by how much of it the sliding window
// still covers (rounded to a whole number).
func (d *Distribution) Count() int {
	if d == nil {
		return 0
	}
	return d.n
}

// Censored returns how many of the samples were cut off (timed out), weighted
// like Count.
func (d *Distribution) Censored() int {
	if d == nil {
		return 0
	}
	return d.censored
}

// CDF returns the estimated probability that a call finishes within t,
// interpolating linearly inside a bucket. It is 0 with no samples. Beyond
// the longest cut-off with no completion past it (see [Distribution.Known])
// the data say nothing, and CDF returns the probability up to there.
func (d *Distribution) CDF(t time.Duration) float64 {
	if d == nil || d.n == 0 || t <= 0 {
		return 0
	}
	i := bucketOf(t)
	lo, hi := bucketBounds(i)
	below, at := 0.0, d.cdfAt(i)
	if i > 0 {
		below = d.cdfAt(i - 1)
	}
	if i == nBuckets-1 {
		return at
	}
	frac := float64(t-lo) / float64(hi-lo)
	return below + (at-below)*frac
}

// Known reports whether the samples say anything about finishing within t:
// false when t lies beyond the longest cut-off with no completion past it, or
// when there are no samples. A caller with that much time left is not like
// any caller that was cut off, and [Op] admission then follows its prior.
func (d *Distribution) Known(t time.Duration) bool { return d != nil && d.n > 0 && t < d.horizon }

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
	if d == nil {
		return 0, false
	}
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
	// Below lo the estimate is zero and above hi it is flat: neither holds
	// the bucket sought, which must rise above the one below it.
	for i := max(d.lo, 0); i <= d.hi; i++ {
		below, at := 0.0, d.cdfAt(i)
		if i > 0 {
			below = d.cdfAt(i - 1)
		}
		if at >= q && at > below {
			lo, hi := bucketBounds(i)
			if i == nBuckets-1 {
				return lo, true
			}
			frac := (q - below) / (at - below)
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
func (d *Distribution) Median() time.Duration {
	if d == nil {
		return 0
	}
	return d.p50
}

// P99 returns the 0.99 quantile, precomputed when the snapshot was taken.
func (d *Distribution) P99() time.Duration {
	if d == nil {
		return 0
	}
	return d.p99
}
