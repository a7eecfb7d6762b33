// Package pick chooses, for one call, the replica most likely to answer
// within the time the call has left. It is the choice behind grpcbudget's
// budget_aware balancer and httpbudget's Picker, and is public for the
// authors of adapters for other protocols: an adapter creates a [Balancer],
// a [Replica] per replica, calls [Balancer.Choose] for each call and
// [Balancer.Done] when the call ends, with the [Result] its protocol's answer
// means for the replica.
//
// Each [Replica] keeps a censoring-aware latency distribution (a
// [budget.Estimator]: a call cut off by its deadline counts as taking at
// least that long), a smoothed recent latency, its requests in flight and
// its consecutive failures. Latency is learned from successes only ([OK]):
// an application error ([Answered]) says the replica is alive and nothing
// of its speed, and a failure ([Failed]: the replica refused, shed or broke,
// however fast) counts towards ejection and never as a latency, so that a
// replica failing at once never looks like the fastest. A cut-off
// ([Expired]) only raises the smoothed latency; on a replica with no
// success yet it is a lower bound, never taken as better than the best
// replica's latency, so that a call with little time left cannot make a
// replica look fast.
//
// For each call [Balancer.Choose] reads the call's deadline and
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
// FailLimit calls in a row, is ejected: it is no longer chosen, except as a
// probe. Probes go to the replicas shunned: ejected, slower than twice the
// best replica (and by MinGap), or whose estimate does not fit the call;
// otherwise a replica whose latency or tail was learned during a fault, and
// that is no longer chosen, would never learn that the fault is over. While
// some replica is shunned, one call in ProbeEvery is due as a probe, given
// to the first call with time for the replica's estimate (for a replica
// that hangs, 8 times the best latency and 20 ms), the shunned replicas
// taking the probes in turn.
//
// Recovery. A replica ejected for its failures returns to service at its
// first probe that succeeds or answers; one ejected for its latency, after
// [RecoverProbes] probes in a row that succeed within half the latency that
// ejected it and within EjectFactor/2 times the best replica's (or as soon as
// its smoothed latency has fallen that far); a slow probe sent before a fast
// one ends no run, and calls begun before the replica came back no longer
// count. So once a fault has ended, and the calls the replica held then
// have ended (until then they are its load), with m replicas shunned (at
// most all but the best), each is chosen again for ordinary calls within
// (RecoverProbes+2) × m × ProbeEvery calls with time for its probe, plus one
// per caller and one per replica (two probes per replica may have been
// spent on the fault, one in flight as it ended and one due before it; the
// callers' calls are those made while the last probe is in flight; the
// replicas', the draws before the two-choice picks it): with the defaults,
// one replica shunned among three and 16 callers, 519 calls. Ejection and recovery are reported as
// [budget.EventEject] and [budget.EventRecover].
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

// Bounds of [Config]: [New] clamps ProbeEvery to [MinProbeEvery,
// MaxProbeEvery] and EjectFactor to at most MaxEjectFactor. One call in 2
// as a probe is the most an ejected replica may cost; one in 10,000 the
// longest wait for its recovery that still counts as recovering.
const (
	MinProbeEvery  = 2
	MaxProbeEvery  = 10000
	MaxEjectFactor = 100
)

// RecoverProbes is how many probes in a row that answer fast bring back a
// replica ejected for its latency.
const RecoverProbes = 3

// maxScan is how many replicas one choice looks at: larger sets are looked
// at through a window of maxScan consecutive replicas starting at random.
const maxScan = 64

// smallScan is the most replicas a choice looks at without zeroing room
// for maxScan.
const smallScan = 8

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
	// ProbeEvery: while some replica is shunned (ejected, slower than twice
	// the best, or unfit for the call), one call in ProbeEvery is due as a
	// probe, the shunned replicas taking them in turn. Zero means
	// 100 (1 %); other values are clamped to [MinProbeEvery, MaxProbeEvery].
	ProbeEvery int
	// EjectFactor: a replica whose recent latency exceeds EjectFactor times
	// the best replica's (and the best by MinGap) is ejected; it recovers
	// below half that. Zero (or anything not above 1) means 4; it is at
	// most MaxEjectFactor.
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
	cfg    Config
	calls  atomic.Uint64 // choices made while some replica was shunned
	owed   atomic.Int64  // probes due and not yet sent
	probed atomic.Int64  // the position of the replica last probed
	best   atomic.Uint64 // float64 bits: the best latency, when last seen with a replica shunned
}

// New returns a Balancer with cfg, its zero fields set to the defaults.
func New(cfg Config) *Balancer {
	switch {
	case cfg.ProbeEvery == 0:
		cfg.ProbeEvery = DefaultProbeEvery
	case cfg.ProbeEvery < MinProbeEvery:
		cfg.ProbeEvery = MinProbeEvery
	case cfg.ProbeEvery > MaxProbeEvery:
		cfg.ProbeEvery = MaxProbeEvery
	}
	if !(cfg.EjectFactor > 1) { // NaN included
		cfg.EjectFactor = DefaultEjectFactor
	}
	cfg.EjectFactor = min(cfg.EjectFactor, MaxEjectFactor)
	if cfg.MinGap <= 0 {
		cfg.MinGap = DefaultMinGap
	}
	if cfg.FailLimit <= 0 {
		cfg.FailLimit = DefaultFailLimit
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	b := &Balancer{cfg: cfg}
	b.probed.Store(-1)
	return b
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
	measured  atomic.Bool   // a success has been recorded: ewma is a latency, not only a lower bound
	good      atomic.Int32  // probes in a row that answered fast
	goodFrom  atomic.Int64  // when the latest fast probe began, ns since base: a slow probe begun before ends no run
	probeLat  atomic.Int64  // the latest fast probe's latency in ns
	renewed   atomic.Int64  // when fast probes last reset its latency, ns since base (0 for never): calls begun before say nothing
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
	r.goodFrom.Store(math.MinInt64)
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

// The results of a call. An adapter maps its protocol's outcomes onto them;
// grpcbudget's balancer and httpbudget's Picker document their tables.
const (
	// OK: the replica did the work. The only result that is a latency
	// sample.
	OK Result = iota
	// Expired: the call was cut off by its own deadline (not by an answer
	// saying "deadline exceeded" well before it): it would have taken at
	// least that long. A lower bound of the latency.
	Expired
	// Failed: the replica failed the call, however fast: unavailable,
	// overloaded or shedding, an internal error. Counts towards ejection,
	// never as a latency.
	Failed
	// Canceled: the caller gave up; says nothing about the replica.
	Canceled
	// Answered: the replica answered with an application error (not
	// found, invalid argument, permission denied): it is alive, which ends
	// a run of failures, but its speed at refusing says nothing of its
	// speed at working.
	Answered
)

// Done records the end of a call begun on r at start, ended at end, and
// whether it was a probe.
func (b *Balancer) Done(r *Replica, start, end time.Time, probe bool, res Result) {
	r.inflight.Add(-1)
	if rn := r.renewed.Load(); rn != 0 && since(start) < rn {
		return // begun before fast probes reset what the replica had learned
	}
	d := end.Sub(start)
	switch res {
	case OK:
		r.est.RecordAt(end, d)
		if r.fails.Load() != 0 {
			r.fails.Store(0)
		}
		if !r.measured.Load() {
			r.measured.Store(true)
		}
		r.observe(d, false, probe)
		if probe {
			b.judgeProbe(r, start, end)
		}
	case Expired:
		r.est.RecordCensoredAt(end, d)
		// A probe cut off may have been sent long before the fast probes
		// that answered since: it ends no run of them.
		r.observe(d, true, false)
	case Failed:
		if r.fails.Load() < math.MaxInt32 {
			r.fails.Add(1)
		}
		if probe {
			r.endRun(start)
		}
		return
	case Answered:
		r.fails.Store(0)
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

// judgeProbe counts a probe begun at start that succeeded at end as fast, or ends the run of
// fast probes: fast is within EjectFactor/2 times the best replica's latency
// (or by no more than MinGap) and, for an ejected replica, within half the
// latency that ejected it. RecoverProbes fast probes in a row of a replica
// that is not ejected, only shunned for its smoothed latency, set that
// latency to the latest of them.
func (b *Balancer) judgeProbe(r *Replica, start, end time.Time) {
	d := end.Sub(start)
	x := float64(d)
	best := math.Float64frombits(b.best.Load())
	ejected := r.ejected.Load()
	el := 0.0
	if ejected {
		el = math.Float64frombits(r.ejectLat.Load())
	}
	if (el > 0 && x > el/2) || (best > 0 && x > b.cfg.EjectFactor/2*best && x-best > float64(b.cfg.MinGap)) {
		r.endRun(start)
		return
	}
	if s := since(start); s > r.goodFrom.Load() {
		r.goodFrom.Store(s)
	}
	r.probeLat.Store(int64(max(d, 1)))
	if r.good.Add(1) >= RecoverProbes && !ejected {
		r.renew(x, end)
	}
}

// endRun ends r's run of fast probes for a probe that failed or answered
// slowly, unless it began before the latest fast one: a probe sent during a
// fault may answer after the fault has ended, and says nothing of now.
func (r *Replica) endRun(start time.Time) {
	if since(start) > r.goodFrom.Load() {
		r.good.Store(0)
	}
}

// renew sets r's smoothed latency at now to l, the latest of the fast probes that
// brought it back, forgets its distribution, and has it ignore the calls
// begun before: calls sent while it hung would otherwise raise its
// latency and tail again long after.
func (r *Replica) renew(l float64, now time.Time) {
	r.renewed.Store(since(now))
	r.ewma.Store(math.Float64bits(l))
	r.good.Store(0)
	r.est.Reset()
	r.tail.Store(0)
	r.median.Store(0)
}

// observe folds d into the smoothed latency. A cut-off (lower) only raises
// it: the call took at least d. On a replica with no success yet a cut-off
// is stored as it is, a lower bound that [Balancer.Choose] never takes as
// better than the best replica's latency.
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
	// The latencies of the window, on the stack: for a few replicas in a
	// small array, since zeroing the large one costs a pick of three
	// replicas a fifth of its time.
	var lat []float64
	if n <= smallScan {
		var small [smallScan]float64
		lat = small[:n]
	} else {
		var large [maxScan]float64
		lat = large[:n]
	}
	best := math.Inf(1)
	for k := range n {
		r := reps[(off+k)%total]
		l := math.Float64frombits(r.ewma.Load())
		lat[k] = l
		if l > 0 && r.measured.Load() && int(r.fails.Load()) < b.cfg.FailLimit && l < best {
			best = l
		}
	}
	if math.IsInf(best, 1) {
		best = 0
	}
	floor := 2 * max(best, 1)
	gap := float64(b.cfg.MinGap)
	var fit uint64
	var shun uint64 // replicas ejected, or avoided for their latency: they get the probes
	nfit, bestK, bestRaw := 0, -1, 0.0
	for k := range n {
		r := reps[(off+k)%total]
		l := lat[k]
		if l < best && !r.measured.Load() {
			l = best // nothing measured yet, or only a lower bound: as good as the best
		}
		_, raw := costs(r, lat[k], best, floor)
		if b.ejected(ctx, now, r, lat[k], best, rem) {
			shun |= 1 << k
			continue
		}
		if l > floor && l-best > gap {
			// Slower than the best by more than noise: chosen only when
			// the others are busy, it would learn nothing more, and a
			// latency learned in a fault would keep it idle for good.
			shun |= 1 << k
		}
		if bestK < 0 || raw < bestRaw {
			bestK, bestRaw = k, raw
		}
		if time.Duration(l) <= rem && time.Duration(r.tail.Load()) <= rem {
			fit |= 1 << k
			nfit++
		} else {
			// Its estimate does not fit: a tail learned in a fault would
			// otherwise keep it from every call, and from learning.
			shun |= 1 << k
		}
	}
	if shun != 0 {
		if bb := math.Float64bits(best); b.best.Load() != bb {
			b.best.Store(bb)
		}
		if k, ok := b.probe(reps, off, n, shun, lat, best, rem); ok {
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
		ci, _ := costs(reps[(off+ki)%total], lat[ki], best, floor)
		cj, _ := costs(reps[(off+kj)%total], lat[kj], best, floor)
		if cj < ci {
			k = kj
		}
	case bestK >= 0:
		k = bestK // none fits: the best, and admission decides
	default:
		k = cheapest(reps, off, n, lat, best, floor) // every replica ejected
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

// costs returns what one more call to r costs: its calls in flight, this
// one included, weighed by its smoothed latency l (0 for none) relative to
// floor (twice the best latency) as cost, which chooses between two
// replicas that fit, and by l itself as raw, which chooses when none does.
func costs(r *Replica, l, best, floor float64) (cost, raw float64) {
	if l < best && !r.measured.Load() {
		l = best // nothing measured yet, or only a lower bound: as good as the best
	}
	load := float64(r.inflight.Load() + 1)
	return load * max(1, l/floor), load * max(l, 1)
}

// cheapest returns the window position, among the n replicas from off, of
// the replica with the lowest raw cost.
func cheapest(reps []*Replica, off, n int, lat []float64, best, floor float64) int {
	k, low := 0, math.Inf(1)
	for i := range n {
		if _, raw := costs(reps[(off+i)%len(reps)], lat[i], best, floor); raw < low {
			k, low = i, raw
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
// recovered; or after RecoverProbes fast probes in a row, its smoothed
// latency then set to the latest of them. One ejected for its failures
// recovers at its first probe that succeeds or answers.
func (b *Balancer) ejected(ctx context.Context, now time.Time, r *Replica, l, best float64, rem time.Duration) bool {
	failing := int(r.fails.Load()) >= b.cfg.FailLimit
	gap := float64(b.cfg.MinGap)
	if r.ejected.Load() {
		slow := best > 0 && l > b.cfg.EjectFactor/2*best && l-best > gap
		if el := math.Float64frombits(r.ejectLat.Load()); el > 0 && l > el/2 {
			slow = true
		}
		if failing {
			return true
		}
		fast := r.good.Load() >= RecoverProbes
		if slow && !fast {
			return true
		}
		if r.ejected.CompareAndSwap(true, false) {
			if slow {
				l = float64(r.probeLat.Load())
				r.renew(l, now)
			}
			r.good.Store(0)
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
		r.good.Store(0)
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
func (b *Balancer) probe(reps []*Replica, off, n int, shun uint64, lat []float64, best float64, rem time.Duration) (int, bool) {
	c := b.calls.Add(1)
	if c%uint64(b.cfg.ProbeEvery) == 0 && b.owed.Load() < maxOwed {
		b.owed.Add(1)
	}
	if b.owed.Load() <= 0 {
		return 0, false
	}
	// The ejected replicas take the probes in turn: the search starts after
	// the replica probed last.
	total := len(reps)
	s := (int(b.probed.Load()) + 1 - off) % total
	if s < 0 {
		s += total
	}
	if s >= n {
		s = 0
	}
	for i := range n {
		k := (s + i) % n
		r := reps[(off+k)%total]
		if shun&(1<<k) == 0 {
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
		b.probed.Store(int64((off + k) % total))
		return k, true
	}
	return 0, false
}

// CutOff reports whether a call begun at start that ended at end with a
// deadline error was cut off by its own deadline: it had one, and ended
// with at most a tenth of the time it had at start left (or 1 ms, whichever
// is more: the callee answers a little before the deadline, keeping a
// margin for the answer's way back). Such a call is [Expired]. A "deadline
// exceeded" answered with more time left is the replica's own (it shed the
// call, or its own work ran out of time): [Failed].
func CutOff(start, end, deadline time.Time, hasDeadline bool) bool {
	if !hasDeadline {
		return false
	}
	slack := max(deadline.Sub(start)/10, time.Millisecond)
	return !end.Before(deadline.Add(-slack))
}
