package budget

import "time"

// The deadline-driven mode of a [Queue], the mode of a zero Target. See the
// Queue doc for what it does; this file is how.

// deadlineMode reports whether the queue orders its items by deadline and
// learns its consumers' service time (Target zero).
func (q *Queue[T]) deadlineMode() bool { return q.Target == 0 }

// service is the time one item keeps a consumer busy, as the queue has
// learned it, with a margin: the consumers times the interval between two
// hand-outs while items kept waiting, plus twice its mean deviation. Zero
// until the queue has handed out two items in a row from a backlog.
func (q *Queue[T]) service() time.Duration {
	if q.gap == 0 {
		return 0
	}
	return time.Duration(max(q.consumers, 1)) * (q.gap + 2*q.gapDev)
}

// learnGap records a hand-out at now: when items waited since the last
// hand-out, every consumer was busy meanwhile and the interval is one
// item's service time shared among them.
func (q *Queue[T]) learnGap(now time.Time) {
	if q.backlog && !q.lastOut.IsZero() {
		d := now.Sub(q.lastOut)
		if q.gap == 0 {
			q.gap, q.gapDev = d, d/2
		} else {
			dev := d - q.gap
			q.gap += dev / 8
			q.gapDev += (max(dev, -dev) - q.gapDev) / 8
		}
	}
	q.lastOut, q.backlog = now, q.n > 0
}

// feasible reports whether e can still be served in time: it has more than
// the learned service time left (an item with no deadline always can).
func (q *Queue[T]) feasible(e *queued[T], now time.Time, s time.Duration) bool {
	return e.due.IsZero() || e.due.Sub(now) > s
}

// key is e's place in deadline order: its deadline less its reserve, or
// for an item with no deadline the time it was put plus Interval.
func (q *Queue[T]) key(e *queued[T]) time.Time {
	if e.due.IsZero() {
		return e.at.Add(q.interval())
	}
	return e.due
}

// unservableAny returns the class ring and position of an item that must
// not be handed out at now, and why; -1 when there is none. In deadline
// order the oldest item is not the first to expire, so every item is
// looked at.
func (q *Queue[T]) unservableAny(now time.Time) (int, int, error) {
	for i := range q.items {
		r := &q.items[i]
		for k := range r.n {
			e := r.at(k)
			if reason := q.dropReason(e, now); reason != nil {
				return i, k, reason
			}
		}
	}
	return -1, -1, nil
}

// pickByDeadline returns the class ring and position of the item Get hands
// out in deadline mode: an item of the class of the last one it picked by
// the rules below, due with it and able to finish (the other calls of the
// same request, most often: see sibling), as long as the item the rules
// pick, and the items of more critical classes, served by deadline, can
// wait one more hand-out; otherwise the oldest item while every item held
// would finish in time even if served last; otherwise the earliest
// deadline among the items that can still finish with the parts sent with
// them (see partsFrom), of the classes a
// standing queue keeps (see servedFrom), across classes while the queue is
// not standing; when no item can finish, the one with the most time left.
func (q *Queue[T]) pickByDeadline(now time.Time) (int, int) {
	s := q.service()
	i, k := q.pickFirst(now, s)
	if i < 0 {
		return i, k
	}
	e := q.items[i].at(k)
	if si, sk := q.sibling(now, s); si >= 0 && (e.due.IsZero() || e.due.Sub(now) > s+q.gap) && q.inTimeFrom(now, s+q.gap, nil, si+1) {
		// The first choice, and every item of a more critical class that
		// deadline order would serve in time, can wait one hand-out more.
		// (inTimeFrom leaves out the items with no more than s plus one
		// interval left: bar the first choice, which is checked above, they
		// come after it and are lost whichever item goes first.)
		return si, sk
	}
	q.group, q.groupClass = e.due, i
	return i, k
}

// siblingSpread is how far apart the deadlines of items taken for parts of
// one request (the calls of a fan-out) may be: the same deadline, read on
// arrival by each call.
const siblingSpread = time.Millisecond

// sibling returns the class ring and position of an item of the class of
// the last item Get picked by its rules, due within siblingSpread of it,
// that can still finish; -1 when there is none. Such items are most often
// the other parts of the same request (the calls a Gather makes at once
// carry one deadline and one class): once one part's work is done, serving
// the others next keeps it from having been done for nothing, where class
// order would let later, more critical items push them past their deadline.
func (q *Queue[T]) sibling(now time.Time, s time.Duration) (int, int) {
	if q.group.IsZero() {
		return -1, -1
	}
	r := &q.items[q.groupClass]
	for k := range r.n {
		if e := r.at(k); q.ofGroup(q.groupClass, e.due) && q.feasible(&e, now, s) {
			return q.groupClass, k
		}
	}
	return -1, -1
}

// ofGroup reports whether an item of class ring i due at due shares the
// class and the deadline of the last item pickFirst picked.
func (q *Queue[T]) ofGroup(i int, due time.Time) bool {
	if q.group.IsZero() || due.IsZero() || i != q.groupClass {
		return false
	}
	d := due.Sub(q.group)
	return d <= siblingSpread && d >= -siblingSpread
}

// pickFirst is pickByDeadline's choice by its rules, the items sharing a
// deadline with the last one left aside.
func (q *Queue[T]) pickFirst(now time.Time, s time.Duration) (int, int) {
	if i, ok := q.allFit(now, s); ok {
		return i, 0
	}
	from := 0
	if q.standing(now) {
		from = q.servedFrom(now, s, nil, 0)
	}
	// The earliest deadline among the items that can finish, of the class
	// rings from ring from up; of any ring when those have none.
	bi, bk := -1, -1
	var best time.Time
	for i := len(q.items) - 1; i >= 0; i-- {
		if i < from && bi >= 0 {
			return bi, bk
		}
		r := &q.items[i]
		for k := 0; k < r.n; {
			// A run of items sent at once, the parts of one request: it
			// is begun only when all of them can finish, one after another.
			parts := q.partsFrom(i, k)
			need := s + time.Duration(min(parts, maxParts)-1)*q.gap
			for end := k + parts; k < end; k++ {
				e := r.at(k)
				if !q.feasible(&e, now, need) {
					continue
				}
				if key := q.key(&e); bi < 0 || key.Before(best) {
					bi, bk, best = i, k, key
				}
			}
		}
	}
	if bi >= 0 {
		return bi, bk
	}
	for i := range q.items {
		r := &q.items[i]
		for k := range r.n {
			e := r.at(k)
			if key := q.key(&e); bi < 0 || key.After(best) {
				bi, bk, best = i, k, key
			}
		}
	}
	return bi, bk
}

// maxParts is the most parts of one request pickFirst counts together:
// the calls a fan-out sends at once are few, and a run of more items
// sharing a deadline is more likely independent work, each worth serving
// alone.
const maxParts = 8

// partsFrom returns how many items of class ring i, from the k-th on in
// arrival order, share the k-th's deadline (within siblingSpread), the
// k-th among them: the parts of one request, sent at once, as far as the
// queue can tell.
func (q *Queue[T]) partsFrom(i, k int) int {
	r := &q.items[i]
	due := r.buf[(r.head+k)%len(r.buf)].due
	if due.IsZero() {
		return 1
	}
	n := 1
	for ; k+n < r.n; n++ {
		if d := r.buf[(r.head+k+n)%len(r.buf)].due; d.IsZero() || d.Sub(due) > siblingSpread || due.Sub(d) > siblingSpread {
			break
		}
	}
	return n
}

// servedFrom returns the least critical class ring from which deadline
// order, over the items of that ring and the more critical ones, would
// serve every such item that can finish in time: 0 when it would serve
// every item held, the most critical ring when not even that ring's items
// would all be. With due not nil it counts a new item of class ring ring
// due at *due among them, in the rings it belongs to. The rings below are
// the classes a standing queue gives up first: their items are served
// only once the items of the rings from it up are.
func (q *Queue[T]) servedFrom(now time.Time, s time.Duration, due *time.Time, ring int) int {
	top := len(q.items) - 1
	for from := range top {
		d := due
		if ring < from {
			d = nil
		}
		if q.inTimeFrom(now, s, d, from) {
			return from
		}
	}
	return top
}

// expectedByDeadline is the wait Put expects in deadline mode for an item
// of class c due at due: the learned interval between hand-outs for each
// item that would be served before it. For a part of the request Get is
// serving, those are the parts already held. Otherwise, while the queue is
// not standing, or the new item's class is among those deadline order
// would serve in time (see servedFrom), the items that can finish and are
// due earlier, in its class and the more critical ones; for an item of a
// class given up, every item of a more critical class and those of its own
// due earlier. An item with a deadline whose class deadline order would
// serve in time without it, and not with it, is expected to wait all its
// time: Put refuses it rather than let it push the items admitted before
// it past their deadline.
func (q *Queue[T]) expectedByDeadline(c Criticality, due, now time.Time) time.Duration {
	if q.gap == 0 {
		return 0
	}
	s := q.service()
	ring := int(c + 1)
	if q.ofGroup(ring, due) {
		// A part of the request Get is serving: it goes next, after the
		// parts already held.
		ahead := 0
		r := &q.items[q.groupClass]
		for k := range r.n {
			if e := r.at(k); q.ofGroup(q.groupClass, e.due) && q.feasible(&e, now, s) {
				ahead++
			}
		}
		return time.Duration(ahead) * q.gap
	}
	from := 0
	if q.standing(now) {
		from = q.servedFrom(now, s, &due, ring)
		if ring < from && !due.IsZero() && q.inTimeFrom(now, s, nil, ring) {
			// Deadline order serves in time every item of its class and
			// the more critical ones held, and would not with it: it would
			// push items admitted before it past their deadline, or be
			// late itself. An item admitted is a promise: a later one of
			// the same class or a less critical one does not break it.
			// (One check tells: fewer items never make it later, so were
			// those rings not served in time, no set of rings with more
			// would be either.)
			return due.Sub(now)
		}
	}
	givenUp := ring < from
	ahead := 0
	for i := range q.items {
		r := &q.items[i]
		for k := range r.n {
			e := r.at(k)
			if !q.feasible(&e, now, s) {
				continue
			}
			switch {
			case givenUp && i > ring:
				ahead++ // a more critical class goes first
			case i < min(ring, from):
			case q.key(&e).Before(due):
				ahead++
			}
		}
	}
	return time.Duration(ahead) * q.gap
}

// removeAt takes the item at position k of class ring i.
func (q *Queue[T]) removeAt(i, k int, now time.Time) queued[T] {
	e := q.items[i].removeAt(k)
	if q.n--; q.n == 0 {
		q.lastEmpty, q.stood, q.backlog = now, false, false
	}
	return e
}

// allFit reports whether every item held would be served in time whatever
// the order: each has more time left than the service time s plus the
// learned interval between hand-outs for every item held. When so, the
// order cannot cost an item its deadline, and serving the oldest first
// keeps the longest wait (the tail a caller sees) shortest, where deadline
// or class order would hold long-budget or low-class items back for
// nothing. Before the queue has learned its service time it cannot tell,
// and reports false. It returns the class ring whose front is the oldest item.
func (q *Queue[T]) allFit(now time.Time, s time.Duration) (int, bool) {
	if q.gap == 0 {
		return -1, false // nothing learned: no telling what fits
	}
	need := s + time.Duration(q.n)*q.gap
	oldest := -1
	var at time.Time
	for i := range q.items {
		r := &q.items[i]
		for k := range r.n {
			if e := r.at(k); !e.due.IsZero() && e.due.Sub(now) <= need {
				return -1, false
			}
		}
		if r.n > 0 && (oldest < 0 || r.front().at.Before(at)) {
			oldest, at = i, r.front().at
		}
	}
	return oldest, oldest >= 0
}

// inTimeFrom reports whether, served in deadline order, every item held in
// the class rings from ring from up (from 0: every item) that can still
// finish would finish in time: the one served after j others has more than
// the service time s plus j learned intervals between hand-outs left. With
// due not nil it counts a new item due at *due (zero for no deadline) as
// held too. While so, giving up a class below would only hold its items
// back for nothing (see servedFrom). Items that can no longer finish are
// left out: they are lost whatever the order.
//
// It ranks without sorting, in time linear in the items held: the times
// left that could be late at some rank (at most s plus one interval per
// item) are counted in buckets one interval wide, and an item is taken to
// be served after every item of its own bucket and the earlier ones. That
// can only overstate an item's rank, so the answer errs toward giving a
// class up. Its buffers are the queue's, so it allocates only when the queue
// holds more items than it ever has.
func (q *Queue[T]) inTimeFrom(now time.Time, s time.Duration, due *time.Time, from int) bool {
	if q.gap == 0 {
		return false // nothing learned: no telling what fits
	}
	m := q.n + 1
	if cap(q.buckets) < m {
		q.buckets, q.ranked = make([]int32, m), make([]ranked, 0, m)
	}
	buckets, tight := q.buckets[:m], q.ranked[:0]
	clear(buckets)
	// Only an item with at most s plus m intervals left can be late at
	// some rank; the rest are on time, and after every one that can be late.
	add := func(left time.Duration, deadline bool) {
		if b := (left - s) / q.gap; b < time.Duration(m) {
			b = max(b, 0)
			buckets[b]++
			tight = append(tight, ranked{left, int32(b), deadline})
		}
	}
	for i := from; i < len(q.items); i++ {
		r := &q.items[i]
		for k := range r.n {
			if e := r.at(k); q.feasible(&e, now, s) {
				add(q.key(&e).Sub(now), !e.due.IsZero())
			}
		}
	}
	if due != nil {
		key := *due
		if key.IsZero() {
			key = now.Add(q.interval())
		}
		add(key.Sub(now), !due.IsZero())
	}
	q.ranked = tight
	for b := 1; b < m; b++ {
		buckets[b] += buckets[b-1]
	}
	for _, e := range tight {
		if e.deadline && e.left <= s+time.Duration(buckets[e.bucket]-1)*q.gap {
			return false
		}
	}
	return true
}

// ranked is an item that can be late at some rank in deadline order: the
// time to its key, its bucket, and whether it has a deadline to meet.
type ranked struct {
	left     time.Duration
	bucket   int32
	deadline bool
}
