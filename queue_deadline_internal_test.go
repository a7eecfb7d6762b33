package budget

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// deepQueue returns a deadline-driven queue that has learned a 1 ms
// interval between hand-outs and holds n items of the three classes with 2
// to 3 s left, as at now.
func deepQueue(n int, now time.Time) *Queue[int] {
	return queueOf(n, now, 2*time.Second, time.Second)
}

// queueOf returns a deadline-driven queue that has learned a 1 ms interval
// between hand-outs and holds n items of the three classes, their times
// left spread evenly over [from, from+spread) in a shuffled order, as at now.
func queueOf(n int, now time.Time, from, spread time.Duration) *Queue[int] {
	q := &Queue[int]{}
	q.gap, q.gapDev, q.consumers = time.Millisecond, 100*time.Microsecond, 1
	for k := range n {
		c := Criticality(k%3 - 1)
		due := now.Add(from + spread*time.Duration(k*7919%n)/time.Duration(n))
		q.push(c, queued[int]{ctx: context.Background(), item: k, at: now, due: due}, now)
	}
	return q
}

// BenchmarkQueueDeadlineOrder measures the check a standing deadline-driven
// queue makes on each Put and Get, whether deadline order serves every item
// in time, beside the pass over every item the mode already made
// (unservableAny), at 10, 100 and 1,000 items held. The items' times left
// (20 ms plus 0.4 to 1.01 ms an item held) put nearly every one within reach of being
// late, so the check ranks them all: its most expensive case. Beside them,
// the choice Get makes among the items (pick), and the same with every
// item due at once (pick-one-deadline), where the parts of one request
// are looked for among all of them.
func BenchmarkQueueDeadlineOrder(b *testing.B) {
	now := time.Now()
	for _, n := range []int{10, 100, 1000} {
		q := queueOf(n, now, 20*time.Millisecond+time.Duration(n)*400*time.Microsecond, time.Duration(n)*610*time.Microsecond)
		s := q.service()
		b.Run(fmt.Sprintf("check/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !q.inTimeFrom(now, s, nil, 0) {
					b.Fatal("deadline order should serve every item in time")
				}
			}
		})
		b.Run(fmt.Sprintf("pick/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if i, _ := q.pickFirst(now, s); i < 0 {
					b.Fatal("no item picked")
				}
			}
		})
		// Every item sharing one deadline, in one class: one run of parts,
		// counted once, not once an item.
		one := queueOf(n, now, 0, 0)
		for i := range one.items {
			r := &one.items[i]
			for k := range r.n {
				r.buf[(r.head+k)%len(r.buf)].due = now.Add(time.Second)
			}
		}
		b.Run(fmt.Sprintf("pick-one-deadline/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if i, _ := one.pickFirst(now, s); i < 0 {
					b.Fatal("no item picked")
				}
			}
		})
		b.Run(fmt.Sprintf("pass/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if i, _, _ := q.unservableAny(now); i >= 0 {
					b.Fatal("no item should be unservable")
				}
			}
		})
	}
}

// The deadline-order check allocates nothing once its buffer has grown to
// the most items the queue has held; 1,000 items of 1 ms with 2-3 s left
// are all served in time, a new one due first among them too; 1,000 items
// due within 0.3-0.4 s are not.
func TestQueueDeadlineOrderCheck(t *testing.T) {
	now := time.Now()
	q := deepQueue(1000, now)
	s := q.service()
	if !q.inTimeFrom(now, s, nil, 0) {
		t.Fatal("1,000 items of 1 ms with 2-3 s left: want in time")
	}
	if allocs := testing.AllocsPerRun(100, func() { q.inTimeFrom(now, s, nil, 0) }); allocs != 0 {
		t.Fatalf("%v allocations a check, want 0", allocs)
	}
	due := now.Add(300 * time.Millisecond)
	if !q.inTimeFrom(now, s, &due, 0) {
		t.Fatal("a new item due first, before 1,000 items with 2-3 s left: want in time")
	}
	tight := &Queue[int]{}
	tight.gap, tight.consumers = time.Millisecond, 1
	for k := range 1000 {
		tight.push(DefaultCriticality, queued[int]{ctx: context.Background(), item: k, at: now, due: now.Add(300*time.Millisecond + time.Duration(k%100)*time.Millisecond)}, now)
	}
	if tight.inTimeFrom(now, tight.service(), nil, 0) {
		t.Fatal("1,000 items of 1 ms due within 0.4 s: want late")
	}
}

// On random queues the check never says "in time" where ranking by a full
// sort says an item is late (it may err the other way, toward class order,
// by at most the items sharing an interval-wide bucket), and it agrees with
// the sort when no two items share a bucket.
func TestQueueDeadlineOrderCheckAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now()
	for trial := range 2000 {
		q := &Queue[int]{}
		q.gap, q.gapDev, q.consumers = time.Millisecond, time.Duration(rng.IntN(3))*100*time.Microsecond, 1
		n := 1 + rng.IntN(120)
		spread := rng.IntN(2) == 0 // one item per bucket at most
		var lefts []time.Duration
		for k := range n {
			left := time.Duration(rng.IntN(300)) * 100 * time.Microsecond
			if spread {
				left = time.Duration(k*(1+rng.IntN(2))+rng.IntN(3))*time.Millisecond + time.Duration(k)*time.Millisecond
			}
			lefts = append(lefts, left)
			q.push(Criticality(rng.IntN(3)-1), queued[int]{ctx: context.Background(), item: k, at: now, due: now.Add(left)}, now)
		}
		s := q.service()
		var ranked []time.Duration
		for _, l := range lefts {
			if l > s {
				ranked = append(ranked, l)
			}
		}
		slices.Sort(ranked)
		exact := true
		for j, l := range ranked {
			if l <= s+time.Duration(j)*q.gap {
				exact = false
			}
		}
		got := q.inTimeFrom(now, s, nil, 0)
		if got && !exact {
			t.Fatalf("trial %d: in time by buckets, late by sort: %v", trial, lefts)
		}
		if spread && got != exact && distinctBuckets(ranked, s, q.gap) {
			t.Fatalf("trial %d: one item a bucket, buckets say %v, sort says %v: %v", trial, got, exact, lefts)
		}
	}
}

// distinctBuckets reports whether no two of the sorted times left share a
// bucket of the check (one interval wide, from s).
func distinctBuckets(sorted []time.Duration, s, gap time.Duration) bool {
	for j := 1; j < len(sorted); j++ {
		if (sorted[j]-s)/gap == (sorted[j-1]-s)/gap {
			return false
		}
	}
	return true
}

// A standing deadline-driven queue that cannot serve every item in time
// chooses which classes it keeps (up to two checks) on each Put and Get
// without allocating: 1,000 items of 1 ms due within 0.1-0.2 s.
func TestQueueStandingChoiceAllocatesNothing(t *testing.T) {
	now := time.Now()
	q := queueOf(1000, now, 300*time.Millisecond, 100*time.Millisecond)
	later := now.Add(200 * time.Millisecond)
	if !q.standing(later) {
		t.Fatal("the queue should be standing")
	}
	if from := q.servedFrom(later, q.service(), nil, 0); from == 0 {
		t.Fatal("1,000 items of 1 ms due within 0.1-0.2 s: want a class given up")
	}
	due := later.Add(150 * time.Millisecond)
	if allocs := testing.AllocsPerRun(100, func() {
		q.pickByDeadline(later)
		q.expectedByDeadline(Sheddable, due, later)
		q.expectedByDeadline(Critical, due, later)
	}); allocs != 0 {
		t.Fatalf("%v allocations a choice, want 0", allocs)
	}
}
