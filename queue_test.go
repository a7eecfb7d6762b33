package budget_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// Put refuses an item whose time cannot cover the measured wait plus the
// consumer's minimum useful time.
func TestQueuePutRefusesItemsThatCannotWaitAndFinish(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := &budget.Queue[int]{MinUseful: 50 * time.Millisecond, Target: -1}
		long, cancel := budget.Start(context.Background(), time.Hour)
		defer cancel()
		for i := range 40 { // items wait 200 ms each: the expected wait converges on it
			if err := q.Put(long, i); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
			if _, _, err := q.Get(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		expected := q.Stats().ExpectedWait
		if expected < 190*time.Millisecond || expected > 200*time.Millisecond {
			t.Fatalf("expected wait %v, want about 200ms", expected)
		}
		short, cancel2 := budget.Start(context.Background(), 240*time.Millisecond)
		defer cancel2()
		err := q.Put(short, 1)
		var be *budget.Error
		if !errors.Is(err, budget.ErrInsufficient) || !errors.As(err, &be) || be.Needed != expected+50*time.Millisecond {
			t.Fatalf("Put with 240ms left: %v; want a refusal needing the wait plus 50ms", err)
		}
		if got := kinds(budget.LedgerFrom(short)); len(got) != 1 || got[0] != budget.EventRefuse {
			t.Fatalf("ledger %v", got)
		}
		ok, cancel3 := budget.Start(context.Background(), 300*time.Millisecond)
		defer cancel3()
		if err := q.Put(ok, 2); err != nil {
			t.Fatalf("Put with 300ms left: %v", err)
		}
		// With a consumer already waiting, nothing waits: expected is zero.
		_, _, _ = q.Get(context.Background())
		got := make(chan int)
		go func() { v, _, _ := q.Get(context.Background()); got <- v }()
		synctest.Wait()
		if err := q.Put(short, 3); err != nil {
			t.Fatalf("Put to a waiting consumer: %v", err)
		}
		if v := <-got; v != 3 {
			t.Fatalf("got %d", v)
		}
		if s := q.Stats(); s.Refused != 1 || s.Put != 42 || s.Served != 42 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// Get drops items that expired while queued: counted, recorded, passed to
// OnDrop, never handed out. The wait of the item handed out goes to its
// ledger.
func TestQueueGetDropsExpiredItems(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var dropped []int
		q := &budget.Queue[int]{Name: "jobs", Target: -1, OnDrop: func(_ context.Context, item int, reason error) {
			if !errors.Is(reason, context.DeadlineExceeded) {
				t.Errorf("drop reason %v", reason)
			}
			dropped = append(dropped, item)
		}}
		short, c1 := budget.Start(context.Background(), 100*time.Millisecond)
		defer c1()
		long, c2 := budget.Start(context.Background(), time.Second)
		defer c2()
		_ = q.Put(short, 1)
		_ = q.Put(short, 2)
		_ = q.Put(long, 3)
		time.Sleep(300 * time.Millisecond)
		v, ictx, err := q.Get(context.Background())
		if err != nil || v != 3 || ictx != long {
			t.Fatalf("Get = %d, %v; want the live item with its own context", v, err)
		}
		if len(dropped) != 2 || q.Stats().Expired != 2 {
			t.Fatalf("dropped %v, stats %+v", dropped, q.Stats())
		}
		for _, ctx := range []context.Context{short, long} {
			for _, ev := range budget.LedgerFrom(ctx).Events() {
				if ev.Kind == budget.EventQueue {
					if ev.Duration != 300*time.Millisecond || ev.Stage != "jobs" {
						t.Errorf("event %v: waited %v, want 300ms in jobs", ev.Kind, ev.Duration)
					}
				}
			}
		}
		if got := kinds(budget.LedgerFrom(short)); len(got) != 2 || got[0] != budget.EventQueue {
			t.Fatalf("short ledger %v", got)
		}
		if got := kinds(budget.LedgerFrom(long)); len(got) != 1 || got[0] != budget.EventQueue {
			t.Fatalf("long ledger %v", got)
		}
	})
}

// A waiter whose context ends leaves at once, and takes no item with it.
func TestQueueCanceledWaiterLeavesAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := &budget.Queue[string]{}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, _, err := q.Get(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 20*time.Millisecond {
			t.Fatalf("err %v after %v", err, time.Since(start))
		}
		_ = q.Put(context.Background(), "x")
		if v, _, err := q.Get(context.Background()); err != nil || v != "x" {
			t.Fatalf("the item was lost: %q, %v", v, err)
		}
		// Many waiters, half of them canceled: every item still reaches one.
		var wg sync.WaitGroup
		var got atomic.Int32
		for i := range 10 {
			ctx, cancel := context.WithCancel(context.Background())
			if i%2 == 0 {
				cancel()
			} else {
				defer cancel()
			}
			wg.Go(func() {
				if _, _, err := q.Get(ctx); err == nil {
					got.Add(1)
				}
			})
		}
		synctest.Wait()
		for range 5 {
			_ = q.Put(context.Background(), "y")
		}
		wg.Wait()
		if got.Load() != 5 || q.Stats().Len != 0 {
			t.Fatalf("%d items reached waiters, %d left", got.Load(), q.Stats().Len)
		}
	})
}

// Under a standing queue Get serves newest-first and sheds items past their
// sojourn bound: Interval for items put before the queue stood, Target
// after (a positive Target: CoDel's 5 ms here).
func TestQueueAdaptiveLIFOAndSojournBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var shed []string
		q := &budget.Queue[string]{Target: 5 * time.Millisecond, OnDrop: func(_ context.Context, item string, reason error) {
			if errors.Is(reason, budget.ErrQueueSojourn) {
				shed = append(shed, item)
			}
		}}
		ctx := context.Background()
		_ = q.Put(ctx, "a") // t=0: the queue stops being empty
		time.Sleep(60 * time.Millisecond)
		_ = q.Put(ctx, "b")
		if v, _, _ := q.Get(ctx); v != "a" {
			t.Fatalf("not standing yet: got %q, want FIFO's a", v)
		}
		_ = q.Put(ctx, "a2")
		time.Sleep(50 * time.Millisecond) // t=110: non-empty for 110ms
		if !q.Stats().Standing {
			t.Fatal("the queue should count as standing")
		}
		_ = q.Put(ctx, "c") // put while standing: may wait 5ms
		if v, _, _ := q.Get(ctx); v != "c" {
			t.Fatalf("standing: got %q, want the newest, c", v)
		}
		_ = q.Put(ctx, "d")
		time.Sleep(10 * time.Millisecond) // t=120: d waited past 5ms
		_ = q.Put(ctx, "e")
		if v, _, _ := q.Get(ctx); v != "e" {
			t.Fatalf("got %q, want e", v)
		}
		// b waited 60ms of its 100ms, a2 50ms: both still fine; d is shed.
		if v, _, _ := q.Get(ctx); v != "a2" {
			t.Fatalf("got %q, want a2 (d shed)", v)
		}
		time.Sleep(50 * time.Millisecond) // b has now waited 110ms
		_ = q.Put(ctx, "f")
		if v, _, _ := q.Get(ctx); v != "f" {
			t.Fatalf("got %q, want f", v)
		}
		if len(shed) != 2 || shed[0] != "d" || shed[1] != "b" || q.Stats().Shed != 2 {
			t.Fatalf("shed %v, stats %+v", shed, q.Stats())
		}
		if q.Stats().Len != 0 || q.Stats().Standing {
			t.Fatalf("len %d standing %v", q.Stats().Len, q.Stats().Standing)
		}
	})
}

func TestQueueFullMakesRoomOnlyFromDeadItems(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := &budget.Queue[int]{Capacity: 2, Target: -1}
		short, c1 := budget.Start(context.Background(), 10*time.Millisecond)
		defer c1()
		long, c2 := budget.Start(context.Background(), time.Second)
		defer c2()
		_ = q.Put(short, 1)
		_ = q.Put(long, 2)
		if err := q.Put(long, 3); !errors.Is(err, budget.ErrQueueFull) {
			t.Fatalf("Put into a full queue: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
		if err := q.Put(long, 4); err != nil {
			t.Fatalf("the expired item should have made room: %v", err)
		}
		if v, _, _ := q.Get(context.Background()); v != 2 {
			t.Fatalf("got %d", v)
		}
		done, c3 := context.WithCancel(context.Background())
		c3()
		if err := q.Put(done, 5); !errors.Is(err, context.Canceled) {
			t.Fatalf("Put with a canceled context: %v", err)
		}
		if s := q.Stats(); s.Full != 1 || s.Expired != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// The queue never hands out an expired item, under concurrent producers and
// consumers (run with -race). Inside the bubble time stands still while
// goroutines run, so "not expired when handed out" is checked exactly.
func TestQueueNeverHandsOutAnExpiredItem(t *testing.T) {
	t.Parallel()
	for _, target := range []time.Duration{-1, 0} {
		synctest.Test(t, func(t *testing.T) {
			q := &budget.Queue[int]{Capacity: 64, MinUseful: 2 * time.Millisecond, Target: target}
			ctx, stop := context.WithCancel(context.Background())
			var put, served, bad atomic.Int64
			var consumers, producers sync.WaitGroup
			for c := range 4 {
				consumers.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(c), 9))
					for {
						_, ictx, err := q.Get(ctx)
						if err != nil {
							return
						}
						served.Add(1)
						if avail, _ := budget.Available(ictx); ictx.Err() != nil || avail <= q.MinUseful {
							bad.Add(1)
						}
						time.Sleep(time.Duration(rng.IntN(4000)) * time.Microsecond)
					}
				})
			}
			for p := range 6 {
				producers.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(p), 7))
					for range 300 {
						ictx, cancel := budget.Start(context.Background(), time.Duration(1+rng.IntN(40))*time.Millisecond)
						if q.Put(ictx, p) == nil {
							put.Add(1)
						}
						time.AfterFunc(50*time.Millisecond, cancel)
						time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
					}
				})
			}
			producers.Wait()
			time.Sleep(100 * time.Millisecond)
			stop()
			consumers.Wait()
			s := q.Stats()
			if bad.Load() != 0 {
				t.Fatalf("%d expired items handed out", bad.Load())
			}
			if served.Load() == 0 || s.Expired+s.Shed == 0 {
				t.Fatalf("the test exercised nothing: %+v", s)
			}
			if got := s.Served + s.Expired + s.Shed + int64(s.Len); got != put.Load() || s.Served != served.Load() {
				t.Fatalf("items lost: put %d, accounted %d (%+v)", put.Load(), got, s)
			}
		})
	}
}
