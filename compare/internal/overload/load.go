package overload

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/timebudget/budget/wire"
)

// outcome is how one request ended, as its user saw it.
type outcome uint8

const (
	inBudget outcome = iota // answered 200 within the budget
	refused                 // answered with an error status within the budget
	timedOut                // no answer within the budget
	failed                  // the exchange failed otherwise
	numOutcomes
)

// sent is one request the load generator sent.
type sent struct {
	id       int64
	class    string
	budget   time.Duration // how long its user waits
	units    int           // its work in the backend, per backend call
	outcome  outcome
	latency  time.Duration
	measured bool // arrived in the measured interval
}

// generator sends requests to a graph's edge.
type generator struct {
	client *http.Client
	rng    *rand.Rand
	mix    Mix
	work   workload
	nextID atomic.Int64
}

func newGenerator(seed uint64, mix Mix, w workload) *generator {
	g := &generator{
		client: &http.Client{Transport: newTransport()},
		mix:    mix,
		work:   w,
	}
	g.reseed(seed)
	return g
}

// reseed restarts the arrivals and classes the generator draws from seed:
// a run reseeds it before each variant with a seed of the load alone, so
// that every variant at a load gets the same arrival times and classes
// (common random numbers) and their differences are not the luck of the
// draw. Over 4 s at 190 requests a second, the count sent alone varies by
// ±28 (one standard deviation) from one draw to another.
func (g *generator) reseed(seed uint64) {
	g.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// gap draws the time to the next Poisson arrival at rate a second.
func (g *generator) gap(rate float64) time.Duration {
	return time.Duration(g.rng.ExpFloat64() / rate * float64(time.Second))
}

func (g *generator) close() { g.client.CloseIdleConnections() }

// class draws a class from the mix.
func (g *generator) class() string {
	total := g.mix.Critical + g.mix.Default + g.mix.Sheddable
	x := g.rng.Float64() * total
	switch {
	case x < g.mix.Critical:
		return classCritical
	case x < g.mix.Critical+g.mix.Default:
		return classDefault
	}
	return classSheddable
}

// request draws the next request: its class, its budget and its work, in
// that order, from the generator's seeded source.
func (g *generator) request() sent {
	s := sent{id: g.nextID.Add(1), class: g.class()}
	s.budget = drawFrom(g.rng, g.work.budgets)
	s.units = unitsOf(drawFrom(g.rng, g.work.costs))
	return s
}

// span is how long a run sends requests: for warmup+measure, or, when n
// is positive, warmupN requests and then n measured ones, however long
// they take at the run's rate.
type span struct {
	warmup, measure time.Duration
	warmupN, n      int
}

// open sends Poisson arrivals at rate a second to url for sp, each with its
// own budget counted from its scheduled arrival, and returns every request
// sent once all have ended, and the length of the measured interval: sp's
// measure, or, for a count of requests, from the first measured arrival to
// the arrival that would have followed the last. The schedule does not
// wait for answers (open loop): a request whose goroutine starts late has
// lost that time from its budget, as a user would have.
func (g *generator) open(ctx context.Context, url string, rate float64, sp span) ([]sent, time.Duration) {
	var (
		mu  sync.Mutex
		out []sent
		wg  sync.WaitGroup
	)
	start := time.Now()
	from, end := start.Add(sp.warmup), start.Add(sp.warmup+sp.measure)
	more := func(i int, at time.Time) bool { return at.Before(end) }
	if sp.n > 0 {
		more = func(i int, at time.Time) bool {
			if i == sp.warmupN {
				from = at
			}
			return i < sp.warmupN+sp.n
		}
	}
	next := start // the next arrival
	for i := 0; more(i, next) && ctx.Err() == nil; i++ {
		at := next
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		s := g.request()
		s.measured = !at.Before(from)
		if sp.n > 0 {
			s.measured = i >= sp.warmupN
		}
		wg.Go(func() {
			s.outcome, s.latency = g.send(ctx, url, s, at, s.budget)
			mu.Lock()
			out = append(out, s)
			mu.Unlock()
		})
		next = at.Add(g.gap(rate))
	}
	wg.Wait()
	if sp.n > 0 {
		return out, next.Sub(from)
	}
	return out, sp.measure
}

// send sends one request that arrived at and whose user waits budget.
func (g *generator) send(ctx context.Context, url string, s sent, at time.Time, budget time.Duration) (outcome, time.Duration) {
	ctx, cancel := context.WithDeadline(ctx, at.Add(budget))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/"+s.class, nil)
	if err != nil {
		return failed, 0
	}
	req.Header.Set(idHeader, strconv.FormatInt(s.id, 10))
	req.Header.Set(unitsHeader, strconv.Itoa(s.units))
	// The user's client says how long its user still waits, as a client of
	// a budget-aware service would; only the budget variant's edge reads it.
	if left := time.Until(at.Add(budget)).Milliseconds(); left > 0 {
		req.Header.Set(wire.HeaderRequestTimeout, strconv.FormatInt(left, 10))
	}
	resp, err := g.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return timedOut, time.Since(at)
		}
		return failed, time.Since(at)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	took := time.Since(at)
	switch {
	case err != nil || took > budget:
		return timedOut, took
	case resp.StatusCode == http.StatusOK:
		return inBudget, took
	}
	return refused, took
}

// closed measures throughput in closed loop: clients each send a request,
// with no deadline of their own, as soon as their previous one is answered,
// for warmup+measure. It returns the answers a second in the measured
// interval.
func (g *generator) closed(ctx context.Context, url string, clients int, warmup, measure time.Duration) float64 {
	start := time.Now()
	from, end := start.Add(warmup), start.Add(warmup+measure)
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := range clients {
		// Each client draws its work from a source of its own, seeded from
		// the generator's, so that the capacity is measured on the
		// workload's mix of costs.
		rng := rand.New(rand.NewPCG(g.rng.Uint64(), uint64(i)))
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(end) {
				s := sent{id: g.nextID.Add(1), class: classDefault, units: unitsOf(drawFrom(rng, g.work.costs))}
				now := time.Now()
				o, _ := g.send(ctx, url, s, now, time.Minute)
				if o == inBudget && time.Now().After(from) && time.Now().Before(end) {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(ok.Load()) / measure.Seconds()
}
