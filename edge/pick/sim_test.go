package pick

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

var (
	simDraws = flag.Int("pick.draws", 300, "draws of the generated recovery test (at most 100 under -short or -race)")
	simSeed  = flag.Uint64("pick.seed", 0, "first seed of the generated recovery test (0: from the clock)")
)

// fault is what a replica does to the calls it receives while its fault
// lasts.
type fault int

const (
	healthy  fault = iota
	hang           // answers nothing until the fault ends: calls are cut off at their deadlines
	slow           // answers 20 times slower
	fastFail       // fails every call at once (refused, shed, internal error)
	partial        // fails one call in two at once
	nFaults
)

func (f fault) String() string {
	return [...]string{"healthy", "hang", "slow", "fast-fail", "partial"}[f]
}

// simReplica is a simulated replica: its latency when healthy and its fault.
type simReplica struct {
	base  time.Duration
	fault fault
}

// simCall is one call of a simulation.
type simCall struct {
	at    time.Duration // since the simulation began
	end   time.Duration // when it ended, since the simulation began
	rep   int
	probe bool
	res   Result
}

// simulate runs workers callers in a closed loop for length on virtual
// time (inside a synctest bubble), each call with a budget drawn by
// budgetOf, against reps whose faults hold from faultFrom to faultTo, and
// returns the calls in the order they were chosen.
func simulate(b *Balancer, reps []*Replica, spec []simReplica, workers int, length, faultFrom, faultTo time.Duration, seed uint64, budgetOf func(*rand.Rand) time.Duration) []simCall {
	start := time.Now()
	var mu sync.Mutex
	var calls []simCall
	var wg sync.WaitGroup
	for w := range workers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Go(func() {
			for {
				now := time.Now()
				at := now.Sub(start)
				if at >= length {
					return
				}
				bud := budgetOf(rng)
				ctx, cancel := context.WithTimeout(context.Background(), bud)
				i, probe := b.Choose(ctx, now, reps)
				mu.Lock()
				k := len(calls)
				calls = append(calls, simCall{at: at, rep: i, probe: probe})
				mu.Unlock()
				reps[i].Begin()
				f := healthy
				if at >= faultFrom && at < faultTo {
					f = spec[i].fault
				}
				lat := spec[i].base * time.Duration(80+rng.IntN(41)) / 100 // ±20 %
				res := OK
				switch f {
				case hang: // until the fault ends, as a paused process or a released lock
					lat = faultTo - at
				case slow:
					lat *= 20
				case fastFail:
					lat, res = 100*time.Microsecond, Failed
				case partial:
					if rng.IntN(2) == 0 {
						lat, res = 100*time.Microsecond, Failed
					}
				}
				if lat >= bud {
					lat, res = bud, Expired
				}
				time.Sleep(lat)
				b.Done(reps[i], now, time.Now(), probe, res)
				cancel()
				mu.Lock()
				calls[k].res, calls[k].end = res, time.Since(start)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return calls
}

// events counts ejections and recoveries by replica name.
type events struct {
	mu    sync.Mutex
	eject map[string]int
	back  map[string]int
}

func newEvents() *events { return &events{eject: map[string]int{}, back: map[string]int{}} }

func (e *events) Observe(_ context.Context, ev budget.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev.Kind {
	case budget.EventEject:
		e.eject[ev.Stage]++
	case budget.EventRecover:
		e.back[ev.Stage]++
	}
}

// The recovery property, on generated cases: 2 to 6 replicas, each healthy
// or with a fault drawn among hang, slow, fast failure and failing one call
// in two, for a while; once the fault has ended (and the calls sent to a
// replica during the fault, its load, have ended), each faulty replica is chosen
// for an ordinary call (not a probe) again within the bound the package
// states, (RecoverProbes+2) × m × ProbeEvery calls plus one per caller and
// one per replica (m replicas shunned, at most all but the best), and no
// healthy replica is ever ejected.
func TestRecoveryGenerated(t *testing.T) {
	seed := *simSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	draws := *simDraws
	if testing.Short() || raceEnabled {
		draws = min(draws, 100) // the race detector: 100 draws, the full count without it
	}
	var worst, worstBound int
	var mu sync.Mutex
	for d := range draws {
		s := seed + uint64(d)
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				got, bound := recoveryDraw(t, s)
				mu.Lock()
				if worstBound == 0 || float64(got)/float64(bound) > float64(worst)/float64(worstBound) {
					worst, worstBound = got, bound
				}
				mu.Unlock()
			})
		})
	}
	t.Logf("%d draws from seed %d (-pick.seed=%d to repeat): the slowest recovery took %d calls after the fault ended, against a bound of %d",
		draws, seed, seed, worst, worstBound)
}

// recoveryDraw runs the draw of seed s and returns the calls the slowest
// faulty replica took to be chosen again after the fault ended, and the
// bound.
func recoveryDraw(t *testing.T, s uint64) (int, int) {
	rng := rand.New(rand.NewPCG(s, 0))
	n := 2 + rng.IntN(5)
	spec := make([]simReplica, n)
	faulty := 0
	for i := range spec {
		spec[i].base = time.Duration(2000+rng.IntN(1000)) * time.Microsecond
		if i < n-1 && (i == 0 || rng.IntN(2) == 0) { // the last stays healthy, the first is faulty
			spec[i].fault = fault(1 + rng.IntN(int(nFaults)-1))
			faulty++
		}
	}
	rng.Shuffle(n, func(i, j int) { spec[i], spec[j] = spec[j], spec[i] })
	probeEvery := 5 + rng.IntN(16)
	workers := 2 + rng.IntN(7)
	ev := newEvents()
	b := New(Config{ProbeEvery: probeEvery, Observer: ev})
	reps := make([]*Replica, n)
	for i := range reps {
		reps[i] = b.NewReplica(fmt.Sprint("r", i))
	}
	const faultFrom, faultTo, length = 300 * time.Millisecond, time.Second, 2200 * time.Millisecond
	calls := simulate(b, reps, spec, workers, length, faultFrom, faultTo, s, func(r *rand.Rand) time.Duration {
		return time.Duration(200+r.IntN(800)) * time.Millisecond
	})
	state := ""
	for i, r := range reps {
		state += fmt.Sprintf("\n  r%d ej %v ewma %v fails %d good %d measured %v tail %v med %v inflight %d", i, r.Ejected(), r.Latency(), r.fails.Load(), r.good.Load(), r.measured.Load(), time.Duration(r.tail.Load()), time.Duration(r.median.Load()), r.InFlight())
	}
	desc := fmt.Sprintf("seed %d (-pick.seed=%d -pick.draws=1): %d replicas %v, ProbeEvery %d, %d callers", s, s, n, spec, probeEvery, workers)
	bound := (RecoverProbes+2)*(n-1)*probeEvery + workers + n
	worst := 0
	for j, sp := range spec {
		name := fmt.Sprint("r", j)
		if sp.fault == healthy {
			if ev.eject[name] > 0 {
				t.Errorf("%s: healthy replica %d was ejected %d times", desc, j, ev.eject[name])
			}
			continue
		}
		// Count from the fault's end, or from when the last call it held
		// ended, if later: until then those calls are its load.
		from := faultTo
		for _, c := range calls {
			if c.rep == j && c.at < faultTo {
				from = max(from, c.end)
			}
		}
		first := -1 // the first call chosen from then on
		for i, c := range calls {
			if c.at >= from {
				first = i
				break
			}
		}
		if first < 0 {
			t.Fatalf("%s: no call after the fault ended", desc)
		}
		back := -1
		for i := first; i < len(calls); i++ {
			if calls[i].rep == j && !calls[i].probe {
				back = i - first
				break
			}
		}
		if back < 0 || back > bound {
			t.Errorf("%s: replica %d (%v) was chosen again %d calls after the fault ended (-1: never, in %d), want within %d%s",
				desc, j, sp.fault, back, len(calls)-first, bound, state)
		}
		worst = max(worst, back)
	}
	return worst, bound
}
