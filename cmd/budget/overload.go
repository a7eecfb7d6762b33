package main

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/timeout"

	"github.com/timebudget/budget"
)

// overloadConfig is the project's overload case: a dependency slows from 50 ms to
// 5 s while a service with 200 workers keeps serving other requests that do
// not touch it. Times are the case's full-size times multiplied by scale, so the case
// fits in a few seconds; the worker count and the shares are not scaled.
type overloadConfig struct {
	scale     float64       // the factor the full-size times were multiplied by
	workers   int           // the service's worker pool
	rate      float64       // requests per second sent to the service, both kinds
	slowShare float64       // share of requests that call the slow dependency
	normal    time.Duration // how long the dependency is fast before it slows
	slowFor   time.Duration // how long it stays slow; goodput is measured here
	fast      time.Duration // the dependency's latency before it slows (full size: 50 ms)
	slow      time.Duration // and after (full size: 5 s)
	budget    time.Duration // the user's budget (1 s)
	upstream  time.Duration // the caller's own per-call timeout without budgets (2 s)
	perCall   time.Duration // the service's per-call timeout to the dependency (3 s)
	work      time.Duration // the other requests' own work (20 ms)
}

// defaultOverload returns the overload case at half its full-size times.
func defaultOverload() overloadConfig {
	const scale = 0.5
	s := func(d time.Duration) time.Duration { return time.Duration(float64(d) * scale) }
	return overloadConfig{
		scale: scale, workers: 200, rate: 500, slowShare: 0.8,
		normal: 500 * time.Millisecond, slowFor: 1500 * time.Millisecond,
		fast: s(50 * time.Millisecond), slow: s(5 * time.Second),
		budget: s(time.Second), upstream: s(2 * time.Second), perCall: s(3 * time.Second),
		work: s(20 * time.Millisecond),
	}
}

// overloadVariant is one way the service calls the slow dependency.
type overloadVariant struct {
	key, name, about string
	budgetAware      bool
	// failsafe runs the call through failsafe-go's circuit breaker and a
	// per-call timeout, with the request's context.
	failsafe bool
	// depContext returns the context of the call to the dependency.
	depContext func(r *http.Request, perCall time.Duration) (context.Context, context.CancelFunc)
}

var overloadVariants = []overloadVariant{
	{
		key: "no-timeout", name: "no timeout",
		about: "the dependency is called with context.Background() and no timeout",
		depContext: func(*http.Request, time.Duration) (context.Context, context.CancelFunc) {
			return context.Background(), func() {}
		},
	},
	{
		key: "common-bug", name: "common bug",
		about: "context.WithTimeout(context.Background(), t): the timeout is kept, the caller's cancellation is lost",
		depContext: func(_ *http.Request, t time.Duration) (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), t)
		},
	},
	{
		key: "careful", name: "careful per-call",
		about: "context.WithTimeout(r.Context(), t): stops when the caller goes away, but t and the caller's own timeout are larger than the time the user has left",
		depContext: func(r *http.Request, t time.Duration) (context.Context, context.CancelFunc) {
			return context.WithTimeout(r.Context(), t)
		},
	},
	{
		key: "failsafe-go", name: "failsafe-go", failsafe: true,
		about: "failsafe-go v0.9.8: a circuit breaker (opens at 50% failures over 20 calls in 1s, half-open after 1s, 3 trial calls) around a per-call timeout t, with r.Context()",
		depContext: func(r *http.Request, t time.Duration) (context.Context, context.CancelFunc) {
			return r.Context(), func() {}
		},
	},
	{
		key: "budget", name: "budget", budgetAware: true,
		about: "the user's budget travels in the headers; the call is an Op that refuses the slow dependency from measured latency",
	},
}

// overloadRun is what one variant measured.
type overloadRun struct {
	variant     overloadVariant
	goodput     float64       // other requests answered within the budget while the dependency was slow
	slowOK      float64       // requests to the slow dependency answered within the budget, same period
	otherP99    time.Duration // latency of the other requests while the dependency was slow
	heldLate    time.Duration // worker time held after the user's deadline had passed
	depWaste    time.Duration // the dependency's work after its caller went away
	sentOther   int
	sentSlow    int
	refusedSlow int64 // calls to the dependency refused before they started
}

// overloadService is the 200-worker service.
type overloadService struct {
	cfg      overloadConfig
	variant  overloadVariant
	sem      chan struct{}
	dep      hop
	op       *budget.Op
	fs       failsafe.Executor[any] // the failsafe-go variant's breaker and timeout
	heldLate atomic.Int64
	refused  atomic.Int64
}

// measureHeader carries the user's deadline (Unix nanoseconds) for
// measurement only: the service never uses it to decide anything.
const measureHeader = "Demo-User-Deadline"

func (s *overloadService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		http.Error(w, "no worker in time", http.StatusServiceUnavailable)
		return
	}
	acquired := time.Now()
	defer func() {
		<-s.sem
		s.measure(r, acquired)
	}()
	var err error
	if r.URL.Path == "/other" {
		t := time.NewTimer(s.cfg.work)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			err = ctx.Err()
		}
	} else if s.variant.budgetAware {
		err = s.op.Do(ctx, s.dep.call)
	} else if s.fs != nil {
		err = s.fs.WithContext(ctx).RunWithExecution(func(e failsafe.Execution[any]) error {
			return s.dep.call(e.Context())
		})
	} else {
		dctx, cancel := s.variant.depContext(r, s.cfg.perCall)
		err = s.dep.call(dctx)
		cancel()
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusGatewayTimeout)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// measure adds the worker time held after the user's deadline had passed.
func (s *overloadService) measure(r *http.Request, acquired time.Time) {
	ns, err := strconv.ParseInt(r.Header.Get(measureHeader), 10, 64)
	if err != nil {
		return
	}
	from := time.Unix(0, ns)
	if acquired.After(from) {
		from = acquired
	}
	if d := time.Since(from); d > 0 {
		s.heldLate.Add(int64(d))
	}
}

// runOverload runs one variant of the overload case.
func runOverload(ctx context.Context, cfg overloadConfig, v overloadVariant, prog *progress) (*overloadRun, error) {
	total := int(cfg.rate * (cfg.normal + cfg.slowFor).Seconds())
	tr := &traffic{total: int64(total)}
	share := float64(cfg.normal) / float64(cfg.normal+cfg.slowFor)
	dep := newDependency("reviews", cfg.fast, true, fault{kind: faultSlowdown, d: cfg.slow, after: share}, tr)
	var servers []server
	defer func() {
		for _, s := range slices.Backward(servers) {
			s.close()
		}
	}()
	ds, err := startDependencyHTTPServer(dep, nil, true)
	if err != nil {
		return nil, err
	}
	servers = append(servers, ds)
	depTransport := newH2CTransport()
	servers = append(servers, closer(depTransport.CloseIdleConnections))
	w := wiring{budgetAware: v.budgetAware}
	svc := &overloadService{
		cfg: cfg, variant: v, sem: make(chan struct{}, cfg.workers),
		dep: httpHop{client: w.httpClient(depTransport, "reviews"), url: ds.url},
	}
	svc.op = &budget.Op{Name: "reviews", Prior: cfg.fast, Cap: cfg.perCall, MinSamples: opMinSamples,
		Estimator: budget.Estimator{Window: opWindow},
		Observer: budget.ObserverFunc(func(_ context.Context, ev budget.Event) {
			if ev.Kind == budget.EventRefuse {
				svc.refused.Add(1)
			}
		})}
	if v.failsafe {
		// Tuned as in compare/: the breaker opens when half of at least 20
		// calls in a second failed, tries 3 calls after a second open.
		cb := circuitbreaker.NewBuilder[any]().
			WithFailureRateThreshold(0.5, 20, time.Second).
			WithDelay(time.Second).
			WithSuccessThreshold(3).
			Build()
		svc.fs = failsafe.With[any](cb, timeout.New[any](cfg.perCall))
	}
	ss, err := startHTTPServer(serverHTTP(svc, "service"), true)
	if err != nil {
		return nil, err
	}
	servers = append(servers, ss)
	userTransport := newH2CTransport()
	servers = append(servers, closer(userTransport.CloseIdleConnections))
	client := w.httpClient(userTransport, "service")

	type sample struct {
		slow, measured bool
		latency        time.Duration
		ok             bool
	}
	samples := make([]sample, total)
	prog.begin("overload", v.name, total)
	var wg sync.WaitGroup
	start := time.Now()
	interval := time.Duration(float64(time.Second) / cfg.rate)
	for i := range total {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		slow := int(float64(i+1)*cfg.slowShare) > int(float64(i)*cfg.slowShare)
		tr.sent.Add(1)
		measured := time.Since(start) >= cfg.normal
		wg.Go(func() {
			defer prog.step()
			var rctx context.Context
			var cancel context.CancelFunc
			if v.budgetAware {
				rctx, cancel = budget.Start(ctx, cfg.budget)
			} else {
				rctx, cancel = context.WithTimeout(ctx, cfg.upstream)
			}
			defer cancel()
			path := "/other"
			if slow {
				path = "/slow"
			}
			t0 := time.Now()
			req, _ := http.NewRequestWithContext(rctx, http.MethodGet, ss.url+path, nil)
			req.Header.Set(measureHeader, strconv.FormatInt(t0.Add(cfg.budget).UnixNano(), 10))
			ok := false
			if resp, err := client.Do(req); err == nil {
				ok = resp.StatusCode == http.StatusOK
				_ = resp.Body.Close()
			}
			lat := time.Since(t0)
			samples[i] = sample{slow: slow, measured: measured, latency: lat, ok: ok && lat <= cfg.budget}
		})
	}
	wg.Wait()
	// Stop the dependency first: calls still waiting on it (no timeout, the
	// common bug) end now instead of holding the run open, and the worker
	// time they would still have held is not counted (an undercount).
	ds.close()
	for _, s := range slices.Backward(servers[1:]) {
		s.close()
	}
	servers = nil
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	run := &overloadRun{variant: v, heldLate: time.Duration(svc.heldLate.Load()),
		depWaste: time.Duration(dep.waste.total.Load())}
	var otherLat []time.Duration
	var otherOK, slowOK int
	for _, s := range samples {
		if !s.measured {
			continue
		}
		if s.slow {
			run.sentSlow++
			if s.ok {
				slowOK++
			}
			continue
		}
		run.sentOther++
		otherLat = append(otherLat, s.latency)
		if s.ok {
			otherOK++
		}
	}
	run.goodput = ratio(otherOK, run.sentOther)
	run.slowOK = ratio(slowOK, run.sentSlow)
	run.otherP99 = quantile(otherLat, 0.99)
	run.refusedSlow = svc.refused.Load()
	return run, nil
}
