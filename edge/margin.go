package edge

import (
	"sync/atomic"
	"time"

	"github.com/timebudget/budget/wire"
)

// The bounds of an adaptive [MarginKeeper].
const (
	// MarginFloor is the least adaptive margin: the answer's own write and its
	// transit back over a local network, which a server cannot see.
	MarginFloor = time.Millisecond
	// MarginCap is the most any adaptive margin holds back.
	MarginCap = 10 * time.Millisecond
	// MarginShare bounds a margin to 1/MarginShare of the caller's time
	// left, 10 %, so a small budget keeps almost all of its time for the
	// work.
	MarginShare = 10

	// lateFactor multiplies the average lateness in the margin; see For.
	lateFactor = 4

	// maxTransit is the largest transit a sample may show; beyond it the
	// two clocks disagree, which says nothing about transit. It is
	// wire.DefaultSkew, the bound the inbound policy uses.
	maxTransit = wire.DefaultSkew
)

// MarginKeeper keeps the answer margin of one server: the time it holds back
// from its handler's deadline so that, when the handler runs out of budget,
// the server's answer reaches the caller before the caller's own deadline.
// It implements [Margin]; the server adapters (httpbudget, grpcbudget,
// connectbudget) keep one each, and an adapter of another protocol can too.
//
// With one shared deadline every hop of a request would expire at the same
// instant, and the whole cancellation cascade would land on the machine at
// the moment the first caller stops waiting. A margin per hop staggers the
// expiries inside-out: the innermost hop's handler stops first, each hop
// answers its caller while the caller still listens, and the caller's own
// timer is the last resort.
//
// The adaptive margin follows what the server measures: how late, after a
// handler's deadline, its answer leaves ([MarginKeeper.Observe]), and how
// long requests took on the way ([MarginKeeper.ObserveTransit]). It is
// bounded so that it never eats a meaningful share of a small budget.
//
// The zero MarginKeeper is adaptive. It is safe for concurrent use: a margin
// costs two atomic loads, a sample an atomic load and store.
type MarginKeeper struct {
	fixed   time.Duration // > 0: fixed margin; < 0: none; 0: adaptive
	late    atomic.Int64  // peak-following average of lateness, in ns
	transit atomic.Int64  // average transit of requests, in ns
}

// NewMarginKeeper returns a MarginKeeper with a fixed margin d (bounded by
// MarginShare of the time left), no margin when d is negative, or an
// adaptive one when d is zero, as the adapters' WithAnswerMargin options
// document.
func NewMarginKeeper(d time.Duration) *MarginKeeper { return &MarginKeeper{fixed: d} }

// For returns the margin to hold back from a caller with left before its
// deadline: for an adaptive MarginKeeper, MarginFloor plus four times the average
// lateness plus the average transit (the answer travels back as the request
// came), at most MarginCap; for a fixed one, its value; in both cases at most
// left/MarginShare.
//
// Why four times: lateness is measured here, from the deadline to the
// answer leaving, but the answer must also be read by the caller, whose CPU
// is as loaded as ours (on one machine, the same CPU), and relayed by it; a
// burst of answers at one deadline queues at both ends. Twice the average
// was measured too small: under load the callers' reading delay was left
// out and the answers of a burst missed their callers by a few
// milliseconds. Four times reaches the bounds under load within a few
// samples and stays near the floor (1 ms plus four times a few hundred
// microseconds) on a quiet machine.
func (k *MarginKeeper) For(left time.Duration) time.Duration {
	if k == nil || k.fixed < 0 || left <= 0 {
		return 0
	}
	m := k.fixed
	if m == 0 {
		m = min(MarginFloor+lateFactor*time.Duration(k.late.Load())+time.Duration(k.transit.Load()), MarginCap)
	}
	return min(m, left/MarginShare)
}

// Observe records that a handler whose deadline passed had its answer
// written late after that deadline. The average follows a rise within a few
// samples (gain 1/4) and a fall slowly (gain 1/32), so it tracks the high
// end of what it sees rather than the middle: an answer that is late by the
// average would already miss the caller. Concurrent samples may overwrite
// each other; losing one under load changes nothing that matters.
func (k *MarginKeeper) Observe(late time.Duration) {
	if k == nil || k.fixed != 0 {
		return
	}
	late = min(max(late, 0), time.Second)
	cur := time.Duration(k.late.Load())
	if late > cur {
		cur += (late - cur) / 4
	} else {
		cur -= (cur - late) / 32
	}
	k.late.Store(int64(cur))
}

// ObserveTransit records the transit of a request that arrived at now with
// rel and abs, its Request-Timeout-Ms and Request-Deadline values. The sender
// computes both from one deadline at the moment it sends, so now + rel
// overshoots abs by the time the request spent on the way. Both values are
// rounded down to the millisecond, so one sample is off by up to a
// millisecond either way; the average (gain 1/8) cancels that out. A sample
// outside [-1 ms, 250 ms] says the clocks disagree and is ignored; values
// that do not parse are ignored.
func (k *MarginKeeper) ObserveTransit(now time.Time, rel, abs string) {
	if k == nil || k.fixed != 0 {
		return
	}
	r, ok, _ := wire.ParseRequestTimeout(rel)
	if !ok {
		return
	}
	a, ok, _ := wire.ParseRequestDeadline(abs)
	if !ok {
		return
	}
	t := now.Add(r).Sub(a)
	if t < -time.Millisecond || t > maxTransit {
		return
	}
	cur := time.Duration(k.transit.Load())
	k.transit.Store(int64(cur + (max(t, 0)-cur)/8))
}
