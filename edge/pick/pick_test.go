package pick

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// teach records n calls of latency d on r.
func teach(b *Balancer, r *Replica, n int, d time.Duration) {
	now := time.Now()
	for range n {
		r.Begin()
		b.Done(r, now.Add(-d), now, false, OK)
	}
}

func TestChooseAvoidsReplicaThatCannotFit(t *testing.T) {
	b := New(Config{})
	reps := []*Replica{b.NewReplica("a"), b.NewReplica("b"), b.NewReplica("c")}
	teach(b, reps[0], 50, 5*time.Millisecond)
	teach(b, reps[1], 50, 5*time.Millisecond)
	teach(b, reps[2], 50, 15*time.Millisecond) // not ejected: under 4 times the best
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	for range 200 {
		i, probe := b.Choose(ctx, time.Now(), reps)
		if i == 2 || probe {
			t.Fatalf("a call with 10 ms left went to replica %d (probe %v), whose latency is 15 ms", i, probe)
		}
	}
	// With no deadline every replica fits; two random ones are compared, so
	// the slower one is chosen only when drawn against nothing better, or
	// as a probe (it is slower than twice the best).
	seen := map[int]int{}
	for range 300 {
		i, probe := b.Choose(context.Background(), time.Now(), reps)
		if !probe {
			seen[i]++
		}
	}
	if seen[0] == 0 || seen[1] == 0 || seen[2] != 0 {
		t.Errorf("choices with no deadline: %v, want replicas 0 and 1 only", seen)
	}
}

func TestChooseNoneFitsTakesBest(t *testing.T) {
	b := New(Config{})
	reps := []*Replica{b.NewReplica("a"), b.NewReplica("b")}
	teach(b, reps[0], 50, 30*time.Millisecond)
	teach(b, reps[1], 50, 20*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if i, _ := b.Choose(ctx, time.Now(), reps); i != 1 {
		t.Errorf("with no replica fitting, chose %d, want the faster 1", i)
	}
}

func TestEjectProbeRecover(t *testing.T) {
	var got []budget.EventKind
	b := New(Config{ProbeEvery: 10, Observer: budget.ObserverFunc(func(_ context.Context, ev budget.Event) {
		got = append(got, ev.Kind)
	})})
	reps := []*Replica{b.NewReplica("a"), b.NewReplica("b")}
	teach(b, reps[0], 20, 5*time.Millisecond)
	teach(b, reps[1], 20, 100*time.Millisecond)
	probes := 0
	for range 100 {
		i, probe := b.Choose(context.Background(), time.Now(), reps)
		if probe {
			probes++
			if i != 1 {
				t.Fatalf("a probe went to replica %d, not the ejected 1", i)
			}
		} else if i != 0 {
			t.Fatalf("a call went to the ejected replica without being a probe")
		}
	}
	if !reps[1].Ejected() || probes < 5 || probes > 15 {
		t.Errorf("ejected %v, %d probes in 100 calls with ProbeEvery 10", reps[1].Ejected(), probes)
	}
	for range 10 { // probes that answer fast
		now := time.Now()
		reps[1].Begin()
		b.Done(reps[1], now.Add(-5*time.Millisecond), now, true, OK)
	}
	b.Choose(context.Background(), time.Now(), reps)
	if reps[1].Ejected() {
		t.Errorf("still ejected after fast probes; latency %v", reps[1].Latency())
	}
	if len(got) != 2 || got[0] != budget.EventEject || got[1] != budget.EventRecover {
		t.Errorf("events %v, want eject then recover", got)
	}
}

func TestFailuresEject(t *testing.T) {
	b := New(Config{})
	reps := []*Replica{b.NewReplica("a"), b.NewReplica("b")}
	teach(b, reps[0], 10, 5*time.Millisecond)
	teach(b, reps[1], 10, 5*time.Millisecond)
	now := time.Now()
	for range DefaultFailLimit {
		reps[1].Begin()
		b.Done(reps[1], now, now, false, Failed)
	}
	b.Choose(context.Background(), now, reps)
	if !reps[1].Ejected() || reps[1].InFlight() != 0 {
		t.Errorf("after %d failures: ejected %v, in flight %d", DefaultFailLimit, reps[1].Ejected(), reps[1].InFlight())
	}
}

// Choose and Done allocate nothing.
func TestChooseAllocs(t *testing.T) {
	b := New(Config{})
	reps := []*Replica{b.NewReplica("a"), b.NewReplica("b"), b.NewReplica("c")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if n := testing.AllocsPerRun(1000, func() {
		now := time.Now()
		i, probe := b.Choose(ctx, now, reps)
		reps[i].Begin()
		b.Done(reps[i], now, now.Add(time.Millisecond), probe, OK)
	}); n != 0 {
		t.Errorf("Choose and Done allocate %v times, want 0", n)
	}
}

func BenchmarkChoose(bb *testing.B) {
	b := New(Config{})
	reps := []*Replica{b.NewReplica("a"), b.NewReplica("b"), b.NewReplica("c")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	now := time.Now()
	bb.ReportAllocs()
	for bb.Loop() {
		i, probe := b.Choose(ctx, now, reps)
		reps[i].Begin()
		b.Done(reps[i], now, now.Add(time.Millisecond), probe, OK)
	}
}

// A few slow answers from a fast replica (a machine pausing) raise its
// smoothed latency but not its median, and eject nothing.
func TestOutliersDoNotEject(t *testing.T) {
	b := New(Config{})
	reps := []*Replica{b.NewReplica("a"), b.NewReplica("b")}
	teach(b, reps[0], 50, 5*time.Millisecond)
	teach(b, reps[1], 50, 5*time.Millisecond)
	end := time.Now().Add(10 * time.Millisecond)
	for range 4 {
		reps[1].Begin()
		b.Done(reps[1], end.Add(-80*time.Millisecond), end, false, OK)
		end = end.Add(6 * time.Millisecond)
	}
	if reps[1].Latency() < 20*time.Millisecond {
		t.Fatalf("smoothed latency %v after four 80 ms answers, want above 4 × 5 ms", reps[1].Latency())
	}
	b.Choose(context.Background(), end, reps)
	if reps[1].Ejected() {
		t.Error("four slow answers among fifty fast ones ejected the replica")
	}
}

// A cut-off is a lower bound: a replica whose only sample is a call cut off
// after 0.1 ms (a call with little time left) is not taken for faster than
// one measured at 5 ms.
func TestCutOffNeverSeedsTinyLatency(t *testing.T) {
	b := New(Config{})
	reps := []*Replica{b.NewReplica("a"), b.NewReplica("b")}
	teach(b, reps[0], 20, 5*time.Millisecond)
	now := time.Now()
	reps[1].Begin()
	b.Done(reps[1], now.Add(-100*time.Microsecond), now, false, Expired)
	seen := map[int]int{}
	for range 400 {
		i, _ := b.Choose(context.Background(), now, reps)
		seen[i]++
	}
	if seen[1] > 300 {
		t.Errorf("choices %v: the replica known only by a 0.1 ms cut-off drew %d of 400 calls", seen, seen[1])
	}
}

// Ejected replicas take the probes in turn, even when ProbeEvery is a
// multiple of the number of replicas (before, the search for an ejected
// replica always started at the same position, and the second of two
// ejected replicas was never probed).
func TestProbesRotateAmongEjected(t *testing.T) {
	b := New(Config{ProbeEvery: 4})
	reps := []*Replica{b.NewReplica("a"), b.NewReplica("b"), b.NewReplica("c"), b.NewReplica("d")}
	teach(b, reps[0], 20, 5*time.Millisecond)
	teach(b, reps[1], 20, 100*time.Millisecond)
	teach(b, reps[2], 20, 5*time.Millisecond)
	teach(b, reps[3], 20, 100*time.Millisecond)
	probed := map[int]int{}
	for range 400 {
		if i, probe := b.Choose(context.Background(), time.Now(), reps); probe {
			probed[i]++
		}
	}
	if probed[1] == 0 || probed[3] == 0 {
		t.Errorf("probes by replica %v, want both ejected replicas (1 and 3) probed", probed)
	}
}

// A replica failing fast (failures, not latency samples) is ejected after
// FailLimit failures, gets only probes (about 1 %), healthy replicas are
// never ejected, and a call that answers an application error ends a run
// of failures without being a latency.
func TestFastFailureEjectsOnlyTheFailingReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := newEvents()
		b := New(Config{Observer: ev})
		reps := []*Replica{b.NewReplica("r0"), b.NewReplica("r1"), b.NewReplica("r2")}
		spec := []simReplica{{base: 2 * time.Millisecond, fault: fastFail}, {base: 2 * time.Millisecond}, {base: 2 * time.Millisecond}}
		calls := simulate(b, reps, spec, 8, 3*time.Second, 500*time.Millisecond, 2*time.Second, 1,
			func(*rand.Rand) time.Duration { return time.Second })
		var during, sent, failed int
		for _, c := range calls {
			if c.at >= 500*time.Millisecond && c.at < 2*time.Second {
				during++
				if c.rep == 0 {
					sent++
				}
				if c.res == Failed {
					failed++
				}
			}
		}
		t.Logf("during the fault: %d calls, %d sent to the failing replica, %d failed; events %v %v", during, sent, failed, ev.eject, ev.back)
		if sent > during/20 || failed > during/10 {
			t.Errorf("the failing replica got %d of %d calls and %d failed, want at most 5 %% and 10 %%", sent, during, failed)
		}
		if ev.eject["r1"]+ev.eject["r2"] > 0 || ev.eject["r0"] == 0 || ev.back["r0"] == 0 {
			t.Errorf("ejections %v, recoveries %v: want r0 ejected and recovered, no other", ev.eject, ev.back)
		}
	})
	b := New(Config{})
	r := b.NewReplica("a")
	now := time.Now()
	for range DefaultFailLimit - 1 {
		r.Begin()
		b.Done(r, now, now, false, Failed)
	}
	r.Begin()
	b.Done(r, now.Add(-time.Microsecond), now, false, Answered)
	if r.fails.Load() != 0 || r.Latency() != 0 {
		t.Errorf("after an application error: %d failures in a row, latency %v; want 0 and none", r.fails.Load(), r.Latency())
	}
}

func TestCutOff(t *testing.T) {
	start := time.Now()
	dl := start.Add(100 * time.Millisecond)
	for _, c := range []struct {
		end  time.Duration
		has  bool
		want bool
	}{
		{100 * time.Millisecond, true, true},
		{95 * time.Millisecond, true, true}, // a callee answering just before, keeping a margin
		{50 * time.Millisecond, true, false},
		{100 * time.Microsecond, true, false}, // a shedding server's answer
		{time.Second, false, false},
	} {
		if got := CutOff(start, start.Add(c.end), dl, c.has); got != c.want {
			t.Errorf("CutOff(end %v, deadline %v) = %v, want %v", c.end, c.has, got, c.want)
		}
	}
}
