package budget_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// A full queue takes a more critical item by displacing the oldest item of
// the least critical class below it; a sheddable item is refused, and a
// critical one only when every item is critical.
func TestQueueFullDisplacesLessCritical(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var displaced []string
		q := &budget.Queue[string]{Capacity: 3, Target: -1, OnDrop: func(_ context.Context, item string, reason error) {
			if !errors.Is(reason, budget.ErrQueueFull) {
				t.Errorf("%s dropped for %v", item, reason)
			}
			displaced = append(displaced, item)
		}}
		bg := context.Background()
		shed, def, crit := budget.WithCriticality(bg, budget.Sheddable), bg, budget.WithCriticality(bg, budget.Critical)
		put := func(ctx context.Context, item string) error { return q.Put(ctx, item) }
		for _, s := range []string{"s1", "s2"} {
			if err := put(shed, s); err != nil {
				t.Fatal(err)
			}
		}
		if err := put(def, "d1"); err != nil {
			t.Fatal(err)
		}
		if err := put(shed, "s3"); !errors.Is(err, budget.ErrQueueFull) {
			t.Fatalf("a sheddable item into a full queue: %v", err)
		}
		if err := put(def, "d2"); err != nil { // displaces s1
			t.Fatal(err)
		}
		if err := put(crit, "c1"); err != nil { // displaces s2
			t.Fatal(err)
		}
		if err := put(def, "d3"); !errors.Is(err, budget.ErrQueueFull) {
			t.Fatalf("a default item into a queue of default and critical items: %v", err)
		}
		for _, c := range []string{"c2", "c3"} { // displace d1, then d2
			if err := put(crit, c); err != nil {
				t.Fatal(err)
			}
		}
		if err := put(crit, "c4"); !errors.Is(err, budget.ErrQueueFull) {
			t.Fatalf("a critical item into a queue of critical items: %v", err)
		}
		want := []string{"s1", "s2", "d1", "d2"}
		if len(displaced) != len(want) {
			t.Fatalf("displaced %v, want %v", displaced, want)
		}
		for i := range want {
			if displaced[i] != want[i] {
				t.Fatalf("displaced %v, want %v", displaced, want)
			}
		}
		if s := q.Stats(); s.Displaced != 4 || s.Full != 3 || s.Len != 3 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// While the queue is standing, Get serves the most critical class first;
// otherwise it stays FIFO across classes.
func TestQueueStandingServesCriticalFirst(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := &budget.Queue[string]{Target: time.Second, Interval: 100 * time.Millisecond}
		bg := context.Background()
		shed, crit := budget.WithCriticality(bg, budget.Sheddable), budget.WithCriticality(bg, budget.Critical)
		_ = q.Put(shed, "s0") // t=0: the queue stops being empty
		_ = q.Put(bg, "d0")
		if v, _, _ := q.Get(bg); v != "s0" {
			t.Fatalf("not standing: got %q, want the oldest, s0", v)
		}
		time.Sleep(60 * time.Millisecond)
		_ = q.Put(bg, "d1")
		_ = q.Put(crit, "c1")
		time.Sleep(50 * time.Millisecond) // t=110: standing; d0 waited past its 100 ms
		_ = q.Put(shed, "s2")
		_ = q.Put(bg, "d2")
		var got []string
		for range 4 {
			v, _, _ := q.Get(bg)
			got = append(got, v)
		}
		want := []string{"c1", "d2", "d1", "s2"}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("standing: served %v, want %v", got, want)
			}
		}
	})
}

// Under a standing queue offered three times what its consumer serves (20 %
// critical, 50 % default, 30 % sheddable, each with 300 ms), sheddable items
// are dropped before default ones and default ones before critical ones,
// and every item handed out still has time left: no critical item misses
// its deadline for the sake of a lower one. Virtual time makes it exact.
func TestQueueOverloadDropsLowerClassesFirst(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := &budget.Queue[int]{Capacity: 64, MinUseful: 5 * time.Millisecond}
		const n = 3000
		var offered, served [3]int
		late := 0
		stop := make(chan struct{})
		consumed := make(chan struct{})
		go func() {
			defer close(consumed)
			for {
				i, ctx, err := q.Get(context.Background())
				if err != nil {
					return
				}
				left, ok := budget.Remaining(ctx)
				if !ok {
					return // the item that wakes a waiting consumer at the end
				}
				if left <= 3*time.Millisecond {
					late++ // would not finish its 3 ms of work
				}
				served[i]++
				select {
				case <-stop:
					return
				case <-time.After(3 * time.Millisecond):
				}
			}
		}()
		var cancels []context.CancelFunc
		for k := range n {
			i := 1
			switch k % 10 {
			case 0, 5:
				i = 2
			case 1, 4, 8:
				i = 0
			}
			offered[i]++
			ctx, cancel := budget.Config{Criticality: classes[i]}.Start(context.Background(), 300*time.Millisecond)
			cancels = append(cancels, cancel)
			_ = q.Put(ctx, i)
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Second) // drain what can still be served
		close(stop)
		_ = q.Put(context.Background(), 1) // wake the consumer if it waits
		<-consumed
		for _, c := range cancels {
			c()
		}
		share := func(i int) float64 { return float64(served[i]) / float64(offered[i]) }
		t.Logf("served: sheddable %.3f, default %.3f, critical %.3f; %+v", share(0), share(1), share(2), q.Stats())
		if late != 0 {
			t.Errorf("%d items handed out with no time left for their work", late)
		}
		// Measured: 0.012, 0.265 and 0.992; the critical items lost are those
		// that waited in FIFO order behind others before the queue counted
		// as standing.
		if share(2) < 0.98 || !(share(0) < share(1) && share(1) < share(2)) {
			t.Errorf("served shares not ordered by class, or critical under 0.98: %.3f, %.3f, %.3f", share(0), share(1), share(2))
		}
	})
}
