package budget

import "sync/atomic"

// learnedLimit is the concurrency limit an [Op] with no Limit learns from
// its dependency's refusals (see Op.Limit), additive increase and
// multiplicative decrease as TCP's congestion window does: a dependency
// that refuses calls above some number in flight says it is full, and the
// calls it would refuse are better refused at home, where they cost
// nothing, than sent to be refused there. Every field is an atomic, so the
// hot path reads one word while nothing was refused.
type learnedLimit struct {
	limit  atomic.Int64 // attempts in flight allowed; 0: no learned limit
	credit atomic.Int64 // successes since the limit last rose
	last   atomic.Int64 // offset of the last refusal seen; valid while limit > 0
}

// limitCut is the share of the attempts in flight a refusal leaves the
// learned limit at, in tenths: a refusal at n in flight says the dependency
// takes fewer than n, and a cut to 0.9·n is the smallest step that keeps
// the next burst under it.
const limitCut = 9

// limitAt returns the concurrency limit that governs an attempt starting at
// offset m: Limit when set; otherwise the learned limit, until one
// estimator window has passed since the last refusal, after which the op
// lets go of it (and forgets it); zero for no limit.
func (o *Op) limitAt(m int64) int64 {
	if o.Limit > 0 {
		return int64(o.Limit)
	}
	l := &o.adm.learned
	n := l.limit.Load()
	if n == 0 {
		return 0
	}
	if m-l.last.Load() > o.Estimator.window() {
		l.limit.CompareAndSwap(n, 0) // the fault is over: let go entirely
		return 0
	}
	return n
}

// refusedAt learns from an attempt the dependency refused, ended at offset
// m while inflight attempts (itself included) were in flight: the learned
// limit is cut to 0.9 times inflight (at least one), or kept when it is
// lower already. It does nothing while Limit is set: the user's bound
// governs.
func (o *Op) refusedAt(m, inflight int64) {
	if o.Limit > 0 {
		return
	}
	l := &o.adm.learned
	next := max(inflight*limitCut/10, 1)
	l.last.Store(m) // before the limit, so that limitAt never lets go of a fresh one
	for {
		cur := l.limit.Load()
		if cur != 0 && cur <= next {
			return
		}
		if l.limit.CompareAndSwap(cur, next) {
			l.credit.Store(0)
			return
		}
	}
}

// succeeded raises the learned limit by one for every limit's worth of
// successes, about one a window of calls in flight: the additive increase
// that finds the dependency's capacity again after a cut, or after it grew.
// While no limit is learned it costs one load.
func (o *Op) succeeded() {
	l := &o.adm.learned
	n := l.limit.Load()
	if n == 0 {
		return
	}
	if c := l.credit.Add(1); c >= n && l.credit.CompareAndSwap(c, 0) {
		l.limit.CompareAndSwap(n, n+1)
	}
}

// serverRefused reports whether err says the server refused the attempt
// before starting any work, as [SentOf] reads it: [ServerRefused], which
// [DoNotRetry] and the adapters' clients mark a shed answer with. It is
// SentOf without the allocation errors.As costs.
func serverRefused(err error) bool {
	s, _ := firstSent(err)
	return s == ServerRefused
}

// firstSent returns what the first error in err's chain, walked depth first
// as errors.As walks it, with a method Sent() Sent says, and whether there
// is one.
func firstSent(err error) (Sent, bool) {
	for err != nil {
		if c, ok := err.(interface{ Sent() Sent }); ok {
			return c.Sent(), true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if s, ok := firstSent(e); ok {
					return s, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}
