// Package pick chooses, for one call, the replica most likely to answer
// within the time the call has left. It is the choice behind grpcbudget's
// budget_aware balancer and httpbudget's Picker.
//
// Each [Replica] keeps a censoring-aware latency distribution (a
// [budget.Estimator]: a call cut off by its deadline counts as taking at
// least that long), a smoothed recent latency that cut-offs can only raise,
// its requests in flight and its consecutive failures. For each call
// [Balancer.Choose] reads the call's deadline and
//
//   - keeps the replicas likely to finish in time: the smoothed latency and
//     the estimated 0.99 quantile both within the time left;
//   - among them draws two at random and takes the one with the better
//     expected completion, latency × (requests in flight + 1) (power of two
//     choices: the best of two random replicas, so that callers choosing at
//     once do not all pile onto the one that looked best). A latency within
//     twice the best replica's counts as the best's: replicas that differ by
//     noise are then spread by their requests in flight alone, as evenly as
//     least_request spreads them, rather than piled onto whichever answered
//     a little faster lately;
//   - when none fits, takes the best expected completion of all and leaves
//     the decision to admission ([budget.Op]).
//
// A replica much slower than the best one (its smoothed latency by
// EjectFactor and by MinGap, its median by half EjectFactor), or failing
// FailLimit calls in a row, is ejected: it is no longer chosen,
// except as a probe, one call in ProbeEvery, given to a call with time for
// the replica's estimate. Probes that answer like the others recover it.
// Ejection and recovery are reported as [budget.EventEject] and
// [budget.EventRecover].
package pick

import (
	"context"
	"math"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/timebudget/budget"
)

// Defaults of [Config].
const (
	DefaultProbeEvery  = 100
	DefaultEjectFactor = 4
	DefaultMinGap      = 2 * time.Millisecond
	DefaultFailLimit   = 5
	DefaultWindow      = 250 * time.Millisecond
)

// maxScan is how many replicas one choice looks at: larger sets are looked
// at through a window of maxScan consecutive replicas starting at random.
const maxScan = 64

// refreshEvery is how often a replica's tail estimate is recomputed from
// its distribution, on the path that records a call's end.
const refreshEvery = 5 * time.Millisecond

// Smoothing of the recent latency: the weight of a new sample, and of a
// probe's sample while the replica is ejected (so that four probes that
// answer as fast as the others bring a replica 10 times slower back).
const (
	alpha      = 0.25
	probeAlpha = 0.5
)

// Config tunes a [Balancer]. The zero value uses the defaults.
type Config struct {
	// ProbeEvery: while a replica is ejected, one call in ProbeEvery may go
	// to it as a probe. Zero means 100 (1 %).
	ProbeEvery int
	// EjectFactor: a replica whose recent latency exceeds EjectFactor times
	// the best replica's (and the best by MinGap) is ejected; it recovers
	// below half that. Zero means 4.
	EjectFactor float64
	// MinGap is the least absolute excess over the best replica's latency
	// that ejects, so that sub-millisecond jitter ejects nothing. Zero
	// means 2 ms.
	MinGap time.Duration
	// FailLimit is how many failures in a row eject a replica. Zero means 5.
	FailLimit int
	// Window is the length of each window of a replica's
	// [budget.Estimator]. Zero means 250 ms.
	Window time.Duration
	// Stage prefixes the Stage of ejection and recovery events, as in
	// "budget_aware 127.0.0.1:8080".
	Stage string
	// Observer, when not nil, receives ejection and recovery events, in
	// addition to the observer of the budget of the call that noticed them.
	Observer budget.Observer
}

// Balancer chooses among replicas. Its state (the probe count) is shared by
// every set of replicas it is asked to choose from, so that a set rebuilt
// when a replica connects keeps probing at the same rate. It is safe for
// concurrent use.
type Balancer struct {
	cfg   Config
	calls atomic.Uint64 // choices made while some replica was ejected
	owed  atomic.Int64  // probes due and not yet sent
}

// New returns a Balancer with cfg, its zero fields set to the defaults.
func New(cfg Config) *Balancer {
	if cfg.ProbeEvery <= 0 {
		cfg.ProbeEvery = DefaultProbeEvery
	}
	if cfg.EjectFactor <= 1 {
		cfg.EjectFactor = DefaultEjectFactor
	}
	if cfg.MinGap <= 0 {
		cfg.MinGap = DefaultMinGap
	}
	if cfg.FailLimit <= 0 {
		cfg.FailLimit = DefaultFailLimit
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	return &Balancer{cfg: cfg}
}

// Replica is one replica's measurements. Create it with
// [Balancer.NewReplica]; keep it while the replica stays in the set, so that
// what it learned survives a rebuilt set.
type Replica struct {
	name      string
	est       budget.Estimator
	inflight  atomic.Int64
	ewma      atomic.Uint64 // float64 bits: smoothed latency in ns; 0 until a sample
	tail      atomic.Int64  // the 0.99 quantile in ns when last refreshed; 0 for none
	median    atomic.Int64  // the median in ns when last refreshed; 0 for none
	refreshed atomic.Int64  // when the tail was refreshed, ns since base
	fails     atomic.Int32  // failures in a row
	ejected   atomic.Bool
	ejectedAt atomic.Int64  // ns since base
	ejectLat  atomic.Uint64 // float64 bits: the smoothed latency that ejected it; 0 when failures did
}

// base is the origin of the monotonic offsets a replica keeps.
var base = time.Now()

func since(t time.Time) int64 { return int64(t.Sub(base)) }

// NewReplica returns the measurements of a replica called name (an address).
func (b *Balancer) NewReplica(name string) *Replica {
	r := &Replica{name: name}
	r.est.Window = b.cfg.Window
	return r
}

// Name returns the name the replica was created with.
func (r *Replica) Name() string { return r.name }

// InFlight returns the replica's calls begun and not yet done.
func (r *Replica) InFlight() int64 { return r.inflight.Load() }

// Ejected reports whether the replica is ejected (chosen only as a probe).
func (r *Replica) Ejected() bool { return r.ejected.Load() }

// Latency returns the replica's smoothed recent latency; zero before its
// first sample.
func (r *Replica) Latency() time.Duration {
	return time.Duration(math.Float64frombits(r.ewma.Load()))
}

// Begin counts a call the replica was chosen for as in flight. Every Begin
// is followed by one [Balancer.Done].
func (r *Replica) Begin() { r.inflight.Add(1) }

// Result is how a call sent to a replica ended, as far as the replica's
// measurements go.
type Result uint8

// The results of a call.
const (
	OK       Result = iota // the replica answered (an application error included): a latency sample
	Expired                // the call was cut off by its deadline: it would have taken at least that long
	Failed                 // the replica failed (unavailable, internal error): counts towards ejection
	Canceled               // the caller gave up: says nothing about the replica
)

// Done records the end of a call begun on r at start, ended at end, and
// whether it was a probe.
func (b *Balancer) Done(r *Replica, start, end time.Time, probe bool, res Result) {
	r.inflight.Add(-1)
	d := end.Sub(start)
	switch res {
	case OK:
		r.est.RecordAt(end, d)
		r.fails.Store(0)
		r.observe(d, false, probe && r.ejected.Load())
	case Expired:
		r.est.RecordCensoredAt(end, d)
		r.observe(d, true, false)
	case Failed:
		r.fails.Add(1)
		return
	default:
		return
	}
	m := since(end)
	if last := r.refreshed.Load(); (last == 0 || m-last >= int64(refreshEvery)) && r.refreshed.CompareAndSwap(last, m) {
		dist := r.est.Distribution(end)
		if dist.Count() == 0 {
			r.tail.Store(0)
			r.median.Store(0)
		} else {
			r.tail.Store(int64(dist.P99()))
			r.median.Store(int64(dist.Median()))
		}
	}
}

// observe folds d into the smoothed latency. A cut-off (lower) only raises
// it: the call took at least d.
func (r *Replica) observe(d time.Duration, lower, fast bool) {
	x := float64(max(d, 1))
	a := alpha
	if fast {
		a = probeAlpha
	}
	for {
		old := r.ewma.Load()
		f := math.Float64frombits(old)
		var nf float64
		switch {
		case old == 0:
			nf = x
		case lower && x <= f:
			return
		default:
			nf = f + a*(x-f)
		}
		if r.ewma.CompareAndSwap(old, math.Float64bits(nf)) {
			return
		}
	}
}

// Choose returns the index in reps of the replica for a call with ctx's
// deadline at now, and whether the call goes to it as a probe. It returns -1
// for an empty set. It allocates nothing, unless it reports an ejection or a
// recovery.
func (b *Balancer) Choose(ctx context.Context, now time.Time, reps []*Replica) (int, bool) {
	total := len(reps)
	switch total {
	case 0:
		return -1, false
	case 1:
		return 0, false
	}
	rem := time.Duration(math.MaxInt64)
	if dl, ok := ctx.Deadline(); ok {
		rem = dl.Sub(now)
	}
	n, off := total, 0
	if n > maxScan {
		n, off = maxScan, rand.IntN(total)
	}
	var lat, cost, raw [maxScan]float64
	best := math.Inf(1)
	for k := range n {
		r := reps[(off+k)%total]
		l := math.Float64frombits(r.ewma.Load())
		lat[k] = l
		if l > 0 && int(r.fails.Load()) < b.cfg.FailLimit && l < best {
			best = l
		}
	}
	if math.IsInf(best, 1) {
		best = 0
	}
	floor := 2 * max(best, 1)
	var fit uint64
	nfit, bestK, anyEjected := 0, -1, false
	for k := range n {
		r := reps[(off+k)%total]
		l := lat[k]
		if l == 0 {
			l = best // nothing measured yet: as good as the best
		}
		load := float64(r.inflight.Load() + 1)
		cost[k], raw[k] = load*max(1, l/floor), load*max(l, 1)
		if b.ejected(ctx, now, r, lat[k], best, rem) {
			anyEjected = true
			continue
		}
		if bestK < 0 || raw[k] < raw[bestK] {
			bestK = k
		}
		if time.Duration(l) <= rem && time.Duration(r.tail.Load()) <= rem {
			fit |= 1 << k
			nfit++
		}
	}
	if anyEjected {
		if k, ok := b.probe(reps, off, n, &lat, best, rem); ok {
			return (off + k) % total, true
		}
	}
	var k int
	switch {
	case nfit == 1:
		k = bits.TrailingZeros64(fit)
	case nfit > 1:
		i := rand.IntN(nfit)
		j := rand.IntN(nfit - 1)
		if j >= i {
			j++
		}
		ki, kj := nthBit(fit, i), nthBit(fit, j)
		k = ki
		if cost[kj] < cost[ki] {
			k = kj
		}
	case bestK >= 0:
		k = bestK // none fits: the best, and admission decides
	default:
		k = cheapest(&raw, n) // every replica ejected
	}
	return (off + k) % total, false
}

// nthBit returns the position of the i-th (from 0) set bit of x.
func nthBit(x uint64, i int) int {
	for range i {
		x &= x - 1
	}
	return bits.TrailingZeros64(x)
}

func cheapest(cost *[maxScan]float64, n int) int {
	k := 0
	for i := 1; i < n; i++ {
		if cost[i] < cost[k] {
			k = i
		}
	}
	return k
}

// ejected updates r's ejection against the best latency and reports
// whether r is ejected. l is r's smoothed latency (0 for none).
//
// A replica ejected for its latency recovers when it is no longer slow
// against the best (within half the factor that ejected it) and its own
// latency has fallen to half what ejected it: a machine that slows every
// replica at once brings the best closer to it without its having
// recovered. One ejected for its failures recovers at its first success.
func (b *Balancer) ejected(ctx context.Context, now time.Time, r *Replica, l, best float64, rem time.Duration) bool {
	failing := int(r.fails.Load()) >= b.cfg.FailLimit
	gap := float64(b.cfg.MinGap)
	if r.ejected.Load() {
		slow := best > 0 && l > b.cfg.EjectFactor/2*best && l-best > gap
		if el := math.Float64frombits(r.ejectLat.Load()); el > 0 && l > el/2 {
			slow = true
		}
		if failing || slow {
			return true
		}
		if r.ejected.CompareAndSwap(true, false) {
			r.est.Reset() // the slow samples of before say nothing now
			r.tail.Store(0)
			r.median.Store(0)
			at := r.ejectedAt.Load()
			b.emit(ctx, budget.Event{Kind: budget.EventRecover, Stage: b.stage(r), At: now,
				Remaining: remaining(rem), Needed: time.Duration(l), Duration: time.Duration(since(now) - at)})
		}
		return false
	}
	// The median confirms what the smoothed latency says, so that a few
	// slow answers (a machine pausing) eject nothing.
	slow := best > 0 && l > b.cfg.EjectFactor*best && l-best > gap &&
		float64(r.median.Load()) > b.cfg.EjectFactor/2*best
	if !failing && !slow {
		return false
	}
	if r.ejected.CompareAndSwap(false, true) {
		r.ejectedAt.Store(since(now))
		el := l
		if failing {
			el = 0
		}
		r.ejectLat.Store(math.Float64bits(el))
		b.emit(ctx, budget.Event{Kind: budget.EventEject, Stage: b.stage(r), At: now,
			Remaining: remaining(rem), Needed: time.Duration(l)})
	}
	return true
}

func remaining(rem time.Duration) time.Duration {
	if rem == math.MaxInt64 {
		return 0
	}
	return rem
}

func (b *Balancer) stage(r *Replica) string {
	if b.cfg.Stage == "" {
		return r.name
	}
	return b.cfg.Stage + " " + r.name
}

func (b *Balancer) emit(ctx context.Context, ev budget.Event) {
	budget.Note(ctx, ev)
	if b.cfg.Observer != nil {
		b.cfg.Observer.Observe(ctx, ev)
	}
}

// maxOwed bounds the probes due at once, so that a quiet spell with no call
// able to take one does not end in a burst of them.
const maxOwed = 4

// probe returns the position among the n scanned replicas of an ejected
// replica to probe with this call, if a probe is due and the call has time
// for it: for the replica's estimate, or, for a replica whose estimate
// exceeds it, for 8 times the best latency and 20 ms (a probe of a replica
// that hangs costs its call, so that one probe in ProbeEvery calls is all
// a hanging replica costs).
func (b *Balancer) probe(reps []*Replica, off, n int, lat *[maxScan]float64, best float64, rem time.Duration) (int, bool) {
	c := b.calls.Add(1)
	if c%uint64(b.cfg.ProbeEvery) == 0 && b.owed.Load() < maxOwed {
		b.owed.Add(1)
	}
	if b.owed.Load() <= 0 {
		return 0, false
	}
	total := len(reps)
	for i := range n {
		k := (int(c%uint64(n)) + i) % n
		r := reps[(off+k)%total]
		if !r.ejected.Load() {
			continue
		}
		need := max(time.Duration(lat[k]), time.Duration(r.tail.Load()))
		need = min(need, time.Duration(8*best)+20*time.Millisecond)
		if need > rem {
			continue
		}
		if b.owed.Add(-1) < 0 {
			b.owed.Add(1)
			return 0, false
		}
		return k, true
	}
	return 0, false
}
