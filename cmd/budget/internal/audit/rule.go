package audit

import (
	"math"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// never stands for a preference without a bound: a callee nothing is
// measured for prefers all the time its caller has.
const never = time.Duration(math.MaxInt64)

type auditor struct {
	t *topology.Topology
	// items holds, for each service reached from the entry, its calls and
	// fallback calls in the order of the file.
	items map[string][]item
	// local is, for each service reached, the p99s of its local fallbacks:
	// time its calls take whatever their timeouts.
	local   map[string]time.Duration
	reached map[string]bool
	// now is the time each service is given as the file stands, before
	// any suggestion, for messages.
	now map[string]time.Duration
	// tail, floor and pref memoize typicalTail and bounds; onPath breaks
	// cycles.
	tail     map[string]time.Duration
	floor    map[string]time.Duration
	pref     map[string]time.Duration
	onPath   map[string]bool
	findings []Finding
}

// item is one call or fallback call of a service: one term of the sum of
// its calls made one after another.
type item struct {
	to      string
	timeout time.Duration // as configured; 0 for none
	// budget says the call spends the rest of its caller's budget
	// ("timeout: budget"): it has no timeout to suggest, and it is
	// reported only when the time its caller is given cannot cover it.
	budget   bool
	retries  int
	backoff  time.Duration
	fallback bool
	pos      topology.Pos
	// back says the call closes a cycle (its callee is on the path from
	// the entry): it gives its callee no time.
	back bool
}

// attempts is how many times the item's timeout can run: retries+1.
func (it item) attempts() int64 { return int64(it.retries) + 1 }

// fixed is the time the item takes whatever its timeout: its backoffs.
func (it item) fixed() time.Duration { return satMul(int64(it.retries), it.backoff) }

// worst is the longest the item holds its caller with timeout d.
func (it item) worst(d time.Duration) time.Duration {
	return satAdd(satMul(it.attempts(), d), it.fixed())
}

func newAuditor(t *topology.Topology) *auditor {
	return &auditor{
		t: t, items: map[string][]item{}, local: map[string]time.Duration{}, now: map[string]time.Duration{}, reached: map[string]bool{},
		tail: map[string]time.Duration{}, floor: map[string]time.Duration{}, pref: map[string]time.Duration{},
		onPath: map[string]bool{},
	}
}

// itemsOf lists the calls and fallback calls of name, and the p99s of its
// local fallbacks.
func (a *auditor) itemsOf(name string) ([]item, time.Duration) {
	var items []item
	var local time.Duration
	for _, c := range a.t.Services[name].Calls {
		items = append(items, item{to: c.To, timeout: c.Timeout, budget: c.Budget, retries: c.Retries, backoff: c.Backoff, pos: c.Pos})
		for _, f := range c.Fallback {
			if f.To == "" {
				local = satAdd(local, f.Latency.P99)
				continue
			}
			items = append(items, item{to: f.To, timeout: f.Timeout, fallback: true, pos: f.Pos})
		}
	}
	return items, local
}

// order walks the services from the entry, depth first in the order of the
// file, marks the calls that close a cycle, and returns the services
// reached in an order where every caller comes before its callees (calls
// closing a cycle aside). The walk keeps its own stack: a chain of 100,000
// services is allowed.
func (a *auditor) order() []string {
	type frame struct {
		name string
		next int
	}
	open := map[string]bool{}
	var post []string
	visit := func(name string) []frame {
		a.reached[name], open[name] = true, true
		a.items[name], a.local[name] = a.itemsOf(name)
		return []frame{{name: name}}
	}
	stack := visit(a.t.Entry)
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		items := a.items[top.name]
		if top.next == len(items) {
			open[top.name] = false
			post = append(post, top.name)
			stack = stack[:len(stack)-1]
			continue
		}
		it := &items[top.next]
		top.next++
		switch {
		case open[it.to]:
			it.back = true
		case !a.reached[it.to]:
			stack = append(stack, visit(it.to)...)
		}
	}
	for i, j := 0, len(post)-1; i < j; i, j = i+1, j-1 {
		post[i], post[j] = post[j], post[i]
	}
	return post
}

// typicalTail is how long a call to name typically takes at worst: its own
// p99 plus its callees' typical tails, as if each were at its p99 at once (an
// upper estimate). Calls on a cycle count once.
func (a *auditor) typicalTail(name string) time.Duration {
	if d, ok := a.tail[name]; ok {
		return d
	}
	if a.onPath[name] {
		return 0
	}
	a.onPath[name] = true
	s := a.t.Services[name]
	d := s.Latency.P99
	for _, c := range s.Calls {
		d = satAdd(d, a.typicalTail(c.To))
	}
	a.onPath[name] = false
	a.tail[name] = d
	return d
}

// bounds returns the floor and the preference of a call to name, from
// measurements alone, in whole milliseconds. The floor is the callee's
// typical tail or, when larger, a little more than its own calls take one
// after another at their floors (retries, backoff and fallbacks counted),
// and at least 1ms. The preference is 2× the typical tail or, when larger,
// what its calls take at their preferences, and at least the floor; never
// when nothing under the callee is measured. A call back into a service on
// the path counts as 1ms.
func (a *auditor) bounds(name string) (floor, pref time.Duration) {
	if f, ok := a.floor[name]; ok {
		return f, a.pref[name]
	}
	if a.onPath[name] {
		return time.Millisecond, time.Millisecond
	}
	tail := a.typicalTail(name)
	a.onPath[name] = true
	items, local := a.items[name], a.local[name]
	if items == nil && local == 0 {
		items, local = a.itemsOf(name)
	}
	var needFloor, needPref time.Duration
	if len(items) > 0 || local > 0 {
		needFloor, needPref = satAdd(local, 1), satAdd(local, 1)
	}
	for _, it := range items {
		f, p := a.bounds(it.to)
		needFloor = satAdd(needFloor, it.worst(f))
		if p == never || needPref == never {
			needPref = never
		} else {
			needPref = satAdd(needPref, it.worst(p))
		}
	}
	a.onPath[name] = false
	floor = ceilMs(max(tail, needFloor, time.Millisecond))
	switch {
	case needPref == never || tail == 0 && len(items) == 0:
		pref = never
	default:
		pref = max(ceilMs(max(satMul(2, tail), needPref)), floor)
	}
	a.floor[name], a.pref[name] = floor, pref
	return floor, pref
}

// ceilMs rounds d up to a whole millisecond, saturating.
func ceilMs(d time.Duration) time.Duration {
	if r := d % time.Millisecond; r != 0 {
		return satAdd(d-r, time.Millisecond)
	}
	return d
}
