package compare

import (
	"context"
	"sync"
	"time"
)

// Phase is a stretch of a [Scenario] during which the dependency answers with
// one latency.
type Phase struct {
	// At is when the phase begins, measured from the start of the run.
	At time.Duration
	// Latency is how long a call that starts during the phase works before
	// it answers.
	Latency time.Duration
}

// Scenario is simulated traffic against a dependency whose latency changes
// over time. Every request arrives at a fixed rate, waits at most Patience for
// its answer, and is served by one [Strategy], which may call the dependency
// and may answer from a cheap fallback.
type Scenario struct {
	// Name identifies the scenario in reports.
	Name string

	// Rate is how many requests arrive per second, evenly spaced.
	Rate int

	// Duration is how long requests keep arriving.
	Duration time.Duration

	// Patience is how long each user waits for an answer: the request's
	// context has this deadline from its arrival. An answer after it does
	// not count.
	Patience time.Duration

	// Phases is the dependency's latency over time, in order of At; the
	// first phase should start at zero. A call takes the latency of the
	// phase in which it starts. Recovery is measured from the start of the
	// last phase.
	Phases []Phase

	// Cascade reports whether the dependency stops working when the call's
	// context ends, as an in-process call or a direct HTTP/1.1 server does.
	// When false the work goes on to its full latency after the caller
	// returns, as it does behind a proxy that keeps its upstream connection,
	// on a pooled channel, in a queue or in a database that was never told.
	Cascade bool

	// FallbackCost is how long the cheap fallback (a cached or default
	// answer) takes.
	FallbackCost time.Duration

	// Window is the width of the sliding window over which a strategy's
	// reaction to the fault and its recovery are judged; zero means 200 ms.
	Window time.Duration

	// Share is the share of requests that must, in every window from some
	// moment on, have been refused (for [Result.StoppedAfter]) or answered
	// by the dependency in time (for [Result.Recovery]); zero means 0.9.
	Share float64
}

// SlowThenRecovered returns scenario A, "slow dependency then recovery": 200
// requests a second for 12 s, each with 1 s of patience, against a dependency
// whose latency goes from 50 ms to 5 s at t=2s and back to 50 ms at t=8s.
// The cheap fallback takes 2 ms. Cascade says whether the dependency stops
// when its caller's context ends.
func SlowThenRecovered(cascade bool) Scenario {
	name := "slow then recovered, work stops with its caller"
	if !cascade {
		name = "slow then recovered, work goes on without its caller"
	}
	return Scenario{
		Name:     name,
		Rate:     200,
		Duration: 12 * time.Second,
		Patience: time.Second,
		Phases: []Phase{
			{At: 0, Latency: 50 * time.Millisecond},
			{At: 2 * time.Second, Latency: 5 * time.Second},
			{At: 8 * time.Second, Latency: 50 * time.Millisecond},
		},
		Cascade:      cascade,
		FallbackCost: 2 * time.Millisecond,
	}
}

// request is what the run records of one request.
type request struct {
	arrival  time.Time
	deadline time.Time
	done     time.Time // when the handler returned
	answer   Answer

	// A handler may call the dependency and the fallback from goroutines
	// of its own (hedging, fan-out), so these two are guarded.
	mu     sync.Mutex
	calls  int       // dependency calls the handler made
	gaveUp time.Time // when the handler turned to the fallback; zero if it did not
}

// inTime reports whether the request was answered before its user left.
func (r *request) inTime() bool {
	return r.answer != NoAnswer && !r.done.After(r.deadline)
}

// Run sends the scenario's traffic through strategy and returns what was
// measured. It returns once every request has been answered and the
// dependency has stopped all its work, so it leaves no goroutine behind.
//
// Run reads the clock it is given: inside a testing/synctest bubble it takes
// no real time to speak of, outside one it takes about Duration plus the
// longest latency of the dependency. Requests' contexts derive from ctx;
// canceling ctx ends the run early, with every request it had started.
func (s Scenario) Run(ctx context.Context, strategy Strategy) Result {
	start := time.Now()
	dep := newDependency(start, s.Phases, s.Cascade)
	handler := strategy.New(s)
	n := int(int64(s.Duration) * int64(s.Rate) / int64(time.Second))
	reqs := make([]request, n)
	interval := time.Second / time.Duration(max(s.Rate, 1))

	var wg sync.WaitGroup
	for i := range reqs {
		at := start.Add(time.Duration(i) * interval)
		if d := time.Until(at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		if ctx.Err() != nil {
			reqs = reqs[:i]
			break
		}
		wg.Add(1)
		go func(r *request) {
			defer wg.Done()
			s.serve(ctx, r, handler, dep)
		}(&reqs[i])
	}
	wg.Wait()
	_ = dep.probe.Wait(context.WithoutCancel(ctx))
	dep.fake.Close() // every call has stopped; this waits for their goroutines to end
	return s.measure(strategy.Name, start, reqs, dep)
}

// serve runs one request through handler.
func (s Scenario) serve(parent context.Context, r *request, handler Handler, dep *dependency) {
	r.arrival = time.Now()
	r.deadline = r.arrival.Add(s.Patience)
	ctx, cancel := context.WithDeadline(parent, r.deadline)
	defer cancel()
	call := func(cctx context.Context) error {
		r.mu.Lock()
		r.calls++
		r.mu.Unlock()
		return dep.call(cctx, ctx)
	}
	fallback := func(fctx context.Context) error {
		r.mu.Lock()
		if r.gaveUp.IsZero() {
			r.gaveUp = time.Now()
		}
		r.mu.Unlock()
		return work(fctx, s.FallbackCost)
	}
	r.answer = handler(ctx, call, fallback)
	r.done = time.Now()
	r.mu.Lock()
	if r.answer != Full && r.gaveUp.IsZero() {
		r.gaveUp = r.done
	}
	r.mu.Unlock()
}

// work takes d, or until ctx is done, whichever comes first.
func work(ctx context.Context, d time.Duration) error {
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return ctx.Err()
}
