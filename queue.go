package budget

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Defaults of a zero [Queue], stated in its field docs.
const (
	defaultQueueCapacity = 1024
	defaultQueueTarget   = 5 * time.Millisecond   // CoDel's target, and the 5 ms of Facebook's "Fail at Scale"
	defaultQueueInterval = 100 * time.Millisecond // CoDel's interval, the 100 ms of "Fail at Scale"
)

// Errors a [Queue] reports.
var (
	// ErrQueueFull is returned by Put when the queue holds Capacity items.
	ErrQueueFull = errors.New("budget: queue full")
	// ErrQueueSojourn is the reason given to OnDrop for an item that waited
	// longer than its sojourn bound in a standing queue.
	ErrQueueSojourn = errors.New("budget: waited too long in a standing queue")
)

// Queue is a bounded queue of work items that knows each item's budget. It
// refuses, at Put, an item whose time left cannot cover the expected wait plus
// the consumer's minimum useful time; it drops, at Get, items whose budget ran
// out (or was canceled) while they waited, so a consumer never starts work
// nobody waits for; and it records each item's queue wait in the item's
// ledger as an [EventQueue] whose Outcome is ok when the item was handed out
// and says why when it was dropped.
//
// With a zero Target (the default) the queue is deadline-driven and sizes
// itself from what it measures; nothing needs to be set:
//
//   - Get serves the item with the earliest deadline among those that can
//     still finish, so a request with 50 ms left is not starved behind one
//     with 3 s left. An item can finish when it has more time left than the
//     consumer's service time the queue has learned (below); an item with no
//     deadline takes its place as if due Interval after it was put. When no
//     item can finish, Get hands out the one with the most time left. But
//     while every item held would finish in time even if served last (each
//     has more left than the service time plus the learned interval between
//     hand-outs for every item held), order costs no item its deadline, and
//     Get serves the oldest, of whatever class: the longest wait, the tail
//     a caller sees, stays as short as a plain FIFO's.
//   - The queue learns the service time from the interval between two
//     hand-outs while items kept waiting (all consumers were busy), times
//     the most consumers it has seen waiting at once, plus twice the
//     interval's mean deviation as a margin (moving averages over about
//     eight hand-outs). Until it has seen a backlog it knows nothing and
//     expects nothing.
//   - Put expects, for a new item, the learned interval between hand-outs
//     for each item held that would be served before it (due earlier and
//     able to finish), and refuses it when its time cannot cover that wait
//     plus the larger of MinUseful and the learned service time. An item
//     admitted this way is refused no longer by a bound of its own: only its
//     deadline, and the items due before it, can drop it.
//   - Under load the least critical classes are given up first, and only
//     as many as must be: while the queue is standing (below), Get serves
//     by deadline the items of the most critical classes that deadline
//     order would all serve in time (the one served after j others needs
//     more left than the service time plus j intervals between
//     hand-outs), taking classes from the most critical down while they
//     fit; the items of the classes given up wait until those are served.
//     When not even the most critical class's items would all be served in
//     time, Get serves that class first. Put counts, for a new item of a
//     class kept, the items of the kept classes due before it; for one of
//     a class given up, every item of a more critical class and those of
//     its own due earlier. While deadline order serves every class in
//     time, nothing is given up.
//   - An item admitted is a promise: while the queue stands, Put refuses a
//     new item with a deadline that would push items of its class or the
//     more critical ones past their deadline, where deadline order would
//     serve them all in time without it (it would give its own class up).
//     A more critical item is still admitted, and the classes it pushes out
//     are given up as above.
//   - Parts of one request go together: once Get has handed out an item,
//     it serves next the items of the same class due within a millisecond
//     of it (the calls a [Gather] makes at once carry one deadline and one
//     class), before the item its rules would pick, as long as that one,
//     and the items of more critical classes served by deadline, can all
//     wait one more hand-out; and Put expects, for such an item, only the
//     wait of the parts already held. Class order would otherwise let
//     later, more critical items push the remaining parts past their
//     deadline, and the work done on the first would be lost. Nor does Get
//     begin such a request unless all its parts held can finish one after
//     another (the last has more left than the service time plus an
//     interval between hand-outs for each part before it; up to eight parts
//     counted) while another item can be served in time instead: the parts
//     are the items of one class put one after another whose deadlines are
//     within a millisecond of each other, and beginning a request whose last
//     part is then dropped wastes the work on the first.
//
// So a queue under overload holds the items it can serve in time, serves
// them just in time, short budgets first, and refuses the rest at once: a
// consumer that propagates the deadline wastes no work on items that cannot
// finish. A queue whose consumers serve a few items a second learns slowly;
// its service time follows the latest backlog, not the quiet spells in
// between.
//
// With a positive Target the queue follows Facebook's "Fail at Scale"
// instead: under a standing queue it serves newest-first and bounds how long
// items may wait: an item put while the queue is standing may wait Target,
// one put while it is not may wait Interval. In normal operation the queue is
// FIFO and short; under overload the newest items, whose callers are still
// waiting, are served first, and old ones are shed quickly instead of each
// being served just too late. That suits items with no deadline, or
// deadlines much longer than anyone waits. A negative Target turns both
// modes off: FIFO always, and items are dropped only when their own budget
// runs out.
//
// The queue stands once it has not been empty for Interval and its oldest
// item has waited longer than Target (5 ms for a zero Target), and it stands
// until it is next empty, so a queue that is busy but flowing (every item
// waits less than that, as in a burst below capacity) stays in its normal
// order and sheds nothing.
//
// Each item is kept with the context it was put with, as a request queue
// must: that context is the item's budget, and Get hands it back for the
// item's work.
//
// Each item has the class its context carries ([CriticalityFrom]), and under
// load the lower classes go first. With a positive Target, while the queue
// is standing, Get serves the most critical class present, so sheddable
// items wait behind default ones and default ones behind critical ones, and
// it is their sojourn bound that runs out first. Within a class it serves
// newest-first only once that class itself has not been empty for Interval:
// a class that keeps draining (critical work that is a fraction of the
// capacity, say) is served in order, so none of its items waits behind
// newer ones of its own class until its bound sheds it; Put expects the wait
// of the item's own class (a moving average per class), so critical items
// are not refused for the waits of sheddable ones. In either mode a full
// queue takes an item by displacing the oldest item of the least critical
// class below the new item's own (dropped with [ErrQueueFull] as its reason
// and counted in QueueStats.Displaced), so a critical item is refused as
// full only when the queue holds nothing but critical items, and a
// sheddable one whenever it is full.
//
// The zero value is ready to use with the defaults. Set the fields before
// first use. A Queue must not be copied after first use. It is safe for
// concurrent use: one mutex guards it, Put and Get allocate nothing when Get
// does not have to wait, and a waiting Get costs one channel. A
// deadline-driven queue looks at every item it holds on each Put and Get
// (8-14 µs for 1,000 items held; Get's choice among them 20-23 µs), and while it stands checks, at most twice
// on each Put and Get, which classes deadline order serves in time, on Get
// once more for the parts rule and on a Put whose class that would give up
// once more for the promise above (16-23 µs a check at 1,000 items;
// BenchmarkQueueDeadlineOrder).
//
// A consumer that runs CPU-bound items back to back in a process with few
// CPUs should let the process's other goroutines run between two items
// (runtime.Gosched): otherwise the answers of finished items and the
// requests arriving wait until the scheduler preempts the consumer, and
// their budgets are spent there rather than in the queue. On a nil *Queue,
// Put and Get return an error matching [ErrMisconfigured] and Stats
// reports an empty queue.
type Queue[T any] struct {
	// Name names the queue in the ledger and in errors. Empty means "queue".
	Name string
	// Capacity bounds the items held. Zero means 1024.
	Capacity int
	// MinUseful is the consumer's minimum useful time: Put refuses an item
	// whose time available cannot cover the expected wait plus MinUseful,
	// and Get drops an item left with MinUseful or less. Zero refuses and
	// drops only items with no time left.
	MinUseful time.Duration
	// Target chooses the queue's mode (see [Queue]). Zero, the default, is
	// deadline-driven: earliest deadline first among the items that can
	// still finish, with the service time learned; the queue counts as
	// standing once its oldest item has waited 5 ms. A positive Target is
	// the sojourn bound of items put while the queue is standing, with
	// adaptive LIFO ("Fail at Scale"; CoDel's 5 ms is the classic value):
	// 5 ms suits items whose work takes well under a millisecond, and when
	// one item's work takes milliseconds a fraction of the budget (a
	// quarter, say) keeps a standing queue from shedding work that would
	// finish in time. A negative value turns both off: FIFO, and items
	// are dropped only when their own budget runs out.
	Target time.Duration
	// Interval is how long the queue must stay non-empty (with its oldest
	// item waiting longer than Target) to count as standing; with a
	// positive Target, how long a class must stay non-empty to be served
	// newest-first and the sojourn bound of items put while the queue is not
	// standing; in the deadline-driven mode, how long after it was put an
	// item with no deadline is due (such an item also keeps the sojourn
	// bounds of a Target of 5 ms). Zero means 100 ms (CoDel's interval).
	Interval time.Duration
	// OnDrop, when not nil, is called for each item dropped by Get (or by a
	// Put making room in a full queue), outside the queue's lock, with the item's context and the reason: an error
	// matching context.DeadlineExceeded or context.Canceled for an item
	// whose budget ended, [ErrInsufficient] for one left with too little
	// time, [ErrQueueSojourn] for one shed from a standing queue. Use it to
	// answer the item's caller at once.
	OnDrop func(ctx context.Context, item T, reason error)

	mu        sync.Mutex
	items     [3]ring[queued[T]] // one per class, indexed by class+1; each allocated at its first item
	n         int                // items held, in every class
	waiters   []chan struct{}
	lastEmpty time.Time        // when the queue was last seen empty
	stood     bool             // standing since it was last empty
	since     [3]time.Time     // per class ring: when it last stopped being empty
	wait      [3]time.Duration // moving average of the wait of items handed out, per class
	stats     QueueStats
	// Deadline mode (Target zero): what the queue learns of its consumers.
	gap        time.Duration // moving average of the interval between hand-outs from a backlog
	gapDev     time.Duration // moving average of its deviation
	lastOut    time.Time     // when an item was last handed out
	backlog    bool          // items waited when it was, and have since
	consumers  int           // the most consumers seen waiting at once
	buckets    []int32       // inTimeFrom's counts
	ranked     []ranked      // and the items it ranks
	group      time.Time     // the deadline of the last item pickFirst picked; zero for none
	groupClass int           // and its class ring
}

type queued[T any] struct {
	ctx       context.Context // the item's own context: its budget and ledger
	item      T
	at        time.Time
	remaining time.Duration // time left when it was put
	bound     time.Duration // longest it may wait; zero for no bound
	due       time.Time     // its deadline less its reserve; zero for none
}

// QueueStats counts what a [Queue] did with its items.
type QueueStats struct {
	Len          int           // items held now, dropped ones not yet found included
	Put          int64         // items accepted
	Served       int64         // items handed out by Get
	Refused      int64         // items Put refused for lack of time
	Full         int64         // items Put refused because the queue was full
	Expired      int64         // items dropped because their budget ended or ran too low
	Shed         int64         // items dropped for waiting past their sojourn bound
	Displaced    int64         // items dropped from a full queue to make room for a more critical one
	ExpectedWait time.Duration // the wait Put currently expects for an item of the default class
	Standing     bool          // whether the queue counts as standing now
}

// Put adds item, which belongs to the request whose budget ctx carries. It
// refuses the item, without waiting, with an [*Error] matching
// [ErrInsufficient] when the time available (remaining less reserve) cannot
// cover the expected wait plus MinUseful, with [ErrQueueFull] when the queue
// is full of items that can still be served (the oldest is dropped to make
// room when it cannot), and with ctx's error when ctx is already done. The
// expected wait is measured: a moving average of the waits of the items Get
// handed out, or zero when a consumer is already waiting. Put never blocks
// longer than it takes to take the queue's lock. Refusals are recorded as
// [EventRefuse] in ctx's ledger.
func (q *Queue[T]) Put(ctx context.Context, item T) error {
	if q == nil {
		return misconfigured("Put on a nil *Queue")
	}
	r := read(ctx)
	if ctx.Err() != nil {
		return ended(ctx, r, nil, q.name(), 0)
	}
	now, available, class := r.now, r.available, CriticalityFrom(ctx)
	q.mu.Lock()
	for q.n >= q.capacity() {
		// Full: make room if an item cannot be served anyway, or by
		// displacing a less critical one.
		i, reason := q.unservable(now)
		if i < 0 {
			if i = q.leastBelow(class); i < 0 {
				q.stats.Full++
				q.mu.Unlock()
				return q.refused(ctx, r, OutcomeShed, 0, ErrQueueFull)
			}
			reason = ErrQueueFull
		}
		e := q.pop(i, false, now)
		q.count(reason)
		q.mu.Unlock()
		q.drop(e, now, reason)
		q.mu.Lock()
	}
	var due time.Time
	if available != noDeadline {
		due = now.Add(available)
	}
	expected, need := q.expected(class, due, now)
	if available != noDeadline && available-expected <= need {
		q.stats.Refused++
		q.mu.Unlock()
		return refuse(ctx, r, nil, q.name(), 0, expected+need)
	}
	bound := time.Duration(0)
	if q.Target >= 0 && (due.IsZero() || !q.deadlineMode()) {
		bound = q.interval()
		if q.standing(now) {
			bound = q.target()
		}
	}
	q.push(class, queued[T]{ctx: ctx, item: item, at: now, remaining: r.remaining, bound: bound, due: due}, now)
	q.stats.Put++
	if len(q.waiters) > 0 {
		w := q.waiters[0]
		q.waiters = q.waiters[1:]
		w <- struct{}{} // buffered, and each waiter is signaled once
	}
	q.mu.Unlock()
	return nil
}

// expected returns the wait Put expects for an item of class c due at due
// (zero for none), and the time it needs beyond that wait.
func (q *Queue[T]) expected(c Criticality, due, now time.Time) (wait, need time.Duration) {
	wait, need = q.wait[c+1], q.MinUseful
	if q.deadlineMode() {
		wait, need = q.expectedByDeadline(c, due, now), max(need, q.service())
	}
	if q.n == 0 && len(q.waiters) > 0 {
		wait = 0
	}
	return wait, need
}

// refused records that Put refused an item for a reason other than time, and
// returns err.
func (q *Queue[T]) refused(ctx context.Context, r reading, why Outcome, needed time.Duration, err error) error {
	emit(ctx, r.st, nil, Event{Kind: EventRefuse, Stage: q.name(), At: r.now, Remaining: r.remaining,
		Needed: needed, Outcome: why, Err: err})
	return err
}

// Get returns the next item and its context (the ctx it was put with, which
// carries its budget: do the item's work in it). It waits until an item is
// available or ctx is done; a Get whose ctx is done returns ctx's error at
// once, without taking an item. Items whose budget ended, or that have
// MinUseful or less left, or that waited past their sojourn bound, are
// dropped instead of handed out: counted, recorded as an [EventQueue] with
// the reason as its Outcome in their ledger, and passed to OnDrop. The wait
// of the item handed out is recorded as an [EventQueue] with [OutcomeOK].
//
// With a positive Target, while the queue is standing, Get takes from the
// most critical class present, its newest item once the class has not been
// empty for Interval and its oldest otherwise; while it is not standing, the
// oldest item of all. With a zero Target it serves by deadline, as the
// [Queue] doc says.
func (q *Queue[T]) Get(ctx context.Context) (T, context.Context, error) {
	var zero T
	if q == nil {
		return zero, nil, misconfigured("Get on a nil *Queue")
	}
	for {
		if err := ctx.Err(); err != nil {
			return zero, nil, err
		}
		q.mu.Lock()
		now := time.Now()
		if q.n > 0 {
			e, i, reason := q.take(now)
			if reason != nil {
				q.count(reason)
				q.mu.Unlock()
				q.drop(e, now, reason)
				continue
			}
			wait := now.Sub(e.at)
			q.wait[i] += (wait - q.wait[i]) / 8
			q.learnGap(now)
			q.stats.Served++
			q.mu.Unlock()
			emit(e.ctx, stateOf(e.ctx), nil, Event{Kind: EventQueue, Stage: q.name(), At: e.at, Duration: wait,
				Remaining: e.remaining, Outcome: OutcomeOK})
			return e.item, e.ctx, nil
		}
		w := make(chan struct{}, 1)
		q.waiters = append(q.waiters, w)
		q.consumers = max(q.consumers, len(q.waiters))
		q.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			q.mu.Lock()
			if !q.removeWaiter(w) && len(q.waiters) > 0 && q.n > 0 {
				// Signaled as it gave up: pass the item on to the next waiter.
				next := q.waiters[0]
				q.waiters = q.waiters[1:]
				next <- struct{}{}
			}
			q.mu.Unlock()
			return zero, nil, ctx.Err()
		}
	}
}

// take removes the item Get looks at next, with its class ring, and says
// why it must be dropped instead of handed out (nil: hand it out).
func (q *Queue[T]) take(now time.Time) (queued[T], int, error) {
	if q.deadlineMode() {
		i, k, reason := q.unservableAny(now)
		if i < 0 {
			i, k = q.pickByDeadline(now)
		}
		return q.removeAt(i, k, now), i, reason
	}
	// Look at the oldest item of each class first, so that stale items do
	// not linger at the back while the newest are served.
	i, reason := q.unservable(now)
	newest := false
	if i < 0 {
		i, newest = q.next(now)
	}
	e := q.pop(i, newest, now)
	if reason == nil {
		reason = q.dropReason(e, now)
	}
	return e, i, reason
}

// dropReason says why e must not be handed out at now, or nil.
func (q *Queue[T]) dropReason(e queued[T], now time.Time) error {
	if err := e.ctx.Err(); err != nil {
		return context.Cause(e.ctx)
	}
	if dl, ok := e.ctx.Deadline(); ok {
		if avail := dl.Sub(now) - stateOf(e.ctx).reserveOrZero(); avail <= q.MinUseful {
			return ErrInsufficient
		}
	}
	if e.bound > 0 && now.Sub(e.at) > e.bound {
		return ErrQueueSojourn
	}
	return nil
}

func (q *Queue[T]) count(reason error) {
	switch {
	case errors.Is(reason, ErrQueueSojourn):
		q.stats.Shed++
	case errors.Is(reason, ErrQueueFull):
		q.stats.Displaced++
	default:
		q.stats.Expired++
	}
}

func (q *Queue[T]) drop(e queued[T], now time.Time, reason error) {
	emit(e.ctx, stateOf(e.ctx), nil, Event{Kind: EventQueue, Stage: q.name(), At: e.at, Duration: now.Sub(e.at),
		Remaining: e.remaining, Outcome: dropOutcome(reason), Err: reason})
	if q.OnDrop != nil {
		q.OnDrop(e.ctx, e.item, reason)
	}
}

// dropOutcome says why an item was dropped: shed from a standing queue,
// canceled by its caller, too little time left, or expired.
func dropOutcome(reason error) Outcome {
	switch {
	case errors.Is(reason, ErrQueueSojourn), errors.Is(reason, ErrQueueFull):
		return OutcomeShed
	case errors.Is(reason, context.Canceled):
		return OutcomeCanceled
	case errors.Is(reason, ErrInsufficient):
		return OutcomeInsufficient
	}
	return OutcomeExpired
}

// Stats returns the queue's counters and current state.
func (q *Queue[T]) Stats() QueueStats {
	if q == nil {
		return QueueStats{}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.stats
	s.Len, s.ExpectedWait, s.Standing = q.n, q.wait[DefaultCriticality+1], q.standing(time.Now())
	return s
}

func (q *Queue[T]) capacity() int {
	if q.Capacity > 0 {
		return q.Capacity
	}
	return defaultQueueCapacity
}

// push adds e at the back of its class's ring, allocating the ring at its
// class's first item.
func (q *Queue[T]) push(c Criticality, e queued[T], now time.Time) {
	r := &q.items[c+1]
	if r.buf == nil {
		r.buf = make([]queued[T], q.capacity())
	}
	if q.n == 0 {
		q.lastEmpty = now
	}
	if r.n == 0 {
		q.since[c+1] = now
	}
	r.pushBack(e)
	q.n++
}

// pop takes the oldest (or, with newest, the newest) item of class ring i.
func (q *Queue[T]) pop(i int, newest bool, now time.Time) queued[T] {
	var e queued[T]
	if newest {
		e = q.items[i].popBack()
	} else {
		e = q.items[i].popFront()
	}
	if q.n--; q.n == 0 {
		q.lastEmpty, q.stood, q.backlog = now, false, false
	}
	return e
}

// unservable returns the class ring whose oldest item must not be handed
// out at now, and why; -1 when every class's oldest item may be.
func (q *Queue[T]) unservable(now time.Time) (int, error) {
	for i := range q.items {
		if q.items[i].n > 0 {
			if reason := q.dropReason(q.items[i].front(), now); reason != nil {
				return i, reason
			}
		}
	}
	return -1, nil
}

// next returns the class ring Get takes from, and whether from its back.
// While the queue is standing it takes the most critical class present, and
// that class's newest item only when the class itself has not been empty for
// Interval: a class served first that keeps draining (critical work that is
// a fraction of the capacity, say) stays FIFO, so none of its items waits
// behind newer ones of its own class until its sojourn bound sheds it.
// Otherwise it takes the oldest item of all.
func (q *Queue[T]) next(now time.Time) (int, bool) {
	if q.standing(now) {
		for i := len(q.items) - 1; i >= 0; i-- {
			if q.items[i].n > 0 {
				return i, now.Sub(q.since[i]) > q.interval()
			}
		}
	}
	best := -1
	for i := range q.items {
		if q.items[i].n > 0 && (best < 0 || q.items[i].front().at.Before(q.items[best].front().at)) {
			best = i
		}
	}
	return best, false
}

// leastBelow returns the ring of the least critical class present that is
// less critical than c, or -1.
func (q *Queue[T]) leastBelow(c Criticality) int {
	for i := 0; i < int(c+1); i++ {
		if q.items[i].n > 0 {
			return i
		}
	}
	return -1
}

// standing reports whether the queue stands: it has not been empty for
// Interval and its oldest item has waited longer than Target. Once standing,
// it stands until it is next empty.
func (q *Queue[T]) standing(now time.Time) bool {
	if q.Target < 0 || q.n == 0 {
		return false
	}
	if !q.stood && now.Sub(q.lastEmpty) > q.interval() && now.Sub(q.oldest()) > q.target() {
		q.stood = true
	}
	return q.stood
}

// oldest returns when the oldest item held was put; q must not be empty.
func (q *Queue[T]) oldest() time.Time {
	var at time.Time
	for i := range q.items {
		if q.items[i].n > 0 && (at.IsZero() || q.items[i].front().at.Before(at)) {
			at = q.items[i].front().at
		}
	}
	return at
}

func (q *Queue[T]) removeWaiter(w chan struct{}) bool {
	for i, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			return true
		}
	}
	return false
}

func (q *Queue[T]) name() string {
	if q.Name == "" {
		return "queue"
	}
	return q.Name
}

func (q *Queue[T]) interval() time.Duration {
	if q.Interval > 0 {
		return q.Interval
	}
	return defaultQueueInterval
}

func (q *Queue[T]) target() time.Duration {
	if q.Target > 0 {
		return q.Target
	}
	return defaultQueueTarget
}
