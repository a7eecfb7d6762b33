package overload

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/budgettest"
	"github.com/timebudget/budget/cmd/budget/internal/dependency"
	"github.com/timebudget/budget/cmd/budget/internal/format"
	"github.com/timebudget/budget/cmd/budget/internal/loopback"
	"github.com/timebudget/budget/cmd/budget/internal/progress"
	"github.com/timebudget/budget/cmd/budget/internal/report"
	"github.com/timebudget/budget/cmd/budget/internal/scenario"
	"github.com/timebudget/budget/compare"
)

// Config is the project's overload case: a dependency slows from 50 ms to
// 5 s while a service with 200 workers keeps serving other requests that do
// not touch it. Times are the case's full-size times multiplied by scale, so the case
// fits in a few seconds; the worker count and the shares are not scaled.
type Config struct {
	Scale     float64       // the factor the full-size times were multiplied by
	Workers   int           // the service's worker pool
	Rate      float64       // requests per second sent to the service, both kinds
	SlowShare float64       // share of requests that call the slow dependency
	Normal    time.Duration // how long the dependency is fast before it slows
	SlowFor   time.Duration // how long it stays slow; goodput is measured here
	Fast      time.Duration // the dependency's latency before it slows (full size: 50 ms)
	Slow      time.Duration // and after (full size: 5 s)
	Budget    time.Duration // the user's budget (1 s)
	Upstream  time.Duration // the caller's own per-call timeout without budgets (2 s)
	PerCall   time.Duration // the service's per-call timeout to the dependency (3 s)
	Work      time.Duration // the other requests' own work (20 ms)
}

// Default returns the overload case at half its full-size times.
func Default() Config {
	const scale = 0.5
	s := func(d time.Duration) time.Duration { return time.Duration(float64(d) * scale) }
	return Config{
		Scale: scale, Workers: 200, Rate: 500, SlowShare: 0.8,
		Normal: 500 * time.Millisecond, SlowFor: 1500 * time.Millisecond,
		Fast: s(50 * time.Millisecond), Slow: s(5 * time.Second),
		Budget: s(time.Second), Upstream: s(2 * time.Second), PerCall: s(3 * time.Second),
		Work: s(20 * time.Millisecond),
	}
}

// overloadVariant is one way the service calls the slow dependency: a name
// for the report and the call itself, a strategy value, so the service has no
// branch per variant.
type overloadVariant struct {
	// key names the variant in report.json, Name in a table, about in a
	// sentence.
	key, Name, about string
	// budgetAware variants start the user's budget, send the time left on
	// every hop, and have the service admit its call through an Op.
	budgetAware bool
	// call makes the service's call to the dependency for request r.
	call func(s *overloadService, r *http.Request) error
}

// tunedFailsafe is compare's tuned failsafe-go configuration; the demo sets
// only its per-call timeout, scaled like the rest of the overload case.
var tunedFailsafe = compare.TunedFailsafe

var Variants = []overloadVariant{
	{
		key: "no-timeout", Name: "no timeout",
		about: "the dependency is called with context.Background() and no timeout",
		call:  func(s *overloadService, _ *http.Request) error { return s.dep.Call(context.Background()) },
	},
	{
		key: "common-bug", Name: "common bug",
		about: "context.WithTimeout(context.Background(), t): the timeout is kept, the caller's cancellation is lost",
		call: func(s *overloadService, _ *http.Request) error {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.PerCall)
			defer cancel()
			return s.dep.Call(ctx)
		},
	},
	{
		key: "careful", Name: "careful per-call",
		about: "context.WithTimeout(r.Context(), t): stops when the caller goes away, but t and the caller's own timeout are larger than the time the user has left",
		call: func(s *overloadService, r *http.Request) error {
			ctx, cancel := context.WithTimeout(r.Context(), s.cfg.PerCall)
			defer cancel()
			return s.dep.Call(ctx)
		},
	},
	{
		key: "failsafe-go", Name: "failsafe-go",
		about: fmt.Sprintf("failsafe-go %s tuned as in compare/: a circuit breaker (opens at %.0f%% failures over %d calls in %v, half-open after %v, %d trial calls) around a per-call timeout t, with r.Context()",
			moduleVersion("github.com/failsafe-go/failsafe-go"), 100*tunedFailsafe.FailureRate, tunedFailsafe.MinCalls, tunedFailsafe.Period, tunedFailsafe.Delay, tunedFailsafe.Trials),
		call: func(s *overloadService, r *http.Request) error {
			return s.failsafe.WithContext(r.Context()).RunWithExecution(func(e failsafe.Execution[any]) error {
				return s.dep.Call(e.Context())
			})
		},
	},
	{
		key: "budget", Name: "budget", budgetAware: true,
		about: "the user's budget travels in the headers; the call is an Op that refuses the slow dependency from measured latency",
		call:  func(s *overloadService, r *http.Request) error { return s.op.Do(r.Context(), s.dep.Call) },
	},
}

// Result is what one variant measured.
type Result struct {
	// variant is the variant that ran.
	variant  overloadVariant
	goodput  float64       // other requests answered within the budget while the dependency was slow
	slowOK   float64       // requests to the slow dependency answered within the budget, same period
	otherP99 time.Duration // latency of the other requests while the dependency was slow
	heldLate time.Duration // worker time held after the user's deadline had passed
	depWaste time.Duration // the dependency's work after its caller went away
	// sentOther and sentSlow count the requests sent of each kind while
	// the dependency was slow.
	sentOther   int
	sentSlow    int
	refusedSlow int64 // calls to the dependency refused before they started
}

// overloadService is the 200-worker service. Requests to /other do their
// own work; every other request calls the slow dependency the variant's way.
type overloadService struct {
	// cfg and variant say how the service runs; sem holds its workers (a
	// request takes one for its whole life); dep calls the dependency.
	cfg      Config
	variant  overloadVariant
	sem      chan struct{}
	dep      dependency.Hop
	op       *budget.Op             // the budget variant's admission
	failsafe failsafe.Executor[any] // the failsafe-go variant's breaker and timeout
	// heldLate adds up, in nanoseconds, the worker time held after the
	// user's deadline; refused counts calls admission refused.
	heldLate atomic.Int64
	refused  atomic.Int64
}

// measureHeader carries the user's deadline (Unix nanoseconds) for
// measurement only: the service never uses it to decide anything.
const measureHeader = "Demo-User-Deadline"

// ServeHTTP takes a worker (waiting for one while the request lasts),
// does the request's work, and measures the worker time held after the
// user's deadline.
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
		s.Measure(r, acquired)
	}()
	var err error
	if r.URL.Path == "/other" {
		err = sleepCtx(ctx, s.cfg.Work)
	} else {
		err = s.variant.call(s, r)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusGatewayTimeout)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// sleepCtx waits for d or until ctx is done, and returns ctx's error then.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Measure adds the worker time held after the user's deadline had passed.
func (s *overloadService) Measure(r *http.Request, acquired time.Time) {
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

// overloadSetup is what one variant's run started: the slow dependency, the
// service, and the client that plays the users.
type overloadSetup struct {
	// dep is the dependency that slows, served by depSrv; svc is the
	// service under test at svcURL, called through client.
	dep     *dependency.Dependency
	depSrv  *dependency.DepHTTPServer
	svc     *overloadService
	svcURL  string
	client  *http.Client
	servers loopback.ServerStack // everything but the dependency's server, in start order
	// traffic counts the requests sent, of total, so the dependency
	// slows down at the configured share of the run.
	traffic *dependency.Traffic
	total   int
}

// Run runs one variant of the overload case: setup, drive, measure.
func Run(ctx context.Context, cfg Config, v overloadVariant, prog *progress.Progress) (*Result, error) {
	st, err := setupOverload(cfg, v)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	prog.Begin("overload", v.Name, st.total)
	samples := driveOverload(ctx, cfg, v, st, prog.Step)
	st.Close()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return measureOverload(v, st, samples), nil
}

// setupOverload starts the slow dependency (a slowdown fault after the
// normal period) and the service calling it the variant's way.
func setupOverload(cfg Config, v overloadVariant) (*overloadSetup, error) {
	st := &overloadSetup{total: int(cfg.Rate * (cfg.Normal + cfg.SlowFor).Seconds())}
	st.traffic = &dependency.Traffic{Total: int64(st.total)}
	share := float64(cfg.Normal) / float64(cfg.Normal+cfg.SlowFor)
	st.dep = dependency.New("reviews", cfg.Fast, true, scenario.Fault{Kind: scenario.FaultSlowdown, D: cfg.Slow, After: share}, st.traffic)
	ds, err := dependency.StartDependencyHTTPServer(st.dep, nil, true)
	if err != nil {
		return nil, err
	}
	st.depSrv = ds
	depTransport := loopback.NewH2CTransport()
	st.servers.Push(loopback.Closer(depTransport.CloseIdleConnections))
	w := loopback.Wiring{BudgetAware: v.budgetAware}
	failsafeCfg := tunedFailsafe
	failsafeCfg.Timeout = cfg.PerCall
	svc := &overloadService{
		cfg: cfg, variant: v, sem: make(chan struct{}, cfg.Workers),
		dep:      dependency.HTTPHop{Client: w.HTTPClient(depTransport, "reviews"), URL: ds.URL},
		failsafe: failsafeCfg.Executor(),
	}
	svc.op = &budget.Op{Name: "reviews", Prior: cfg.Fast, Cap: cfg.PerCall,
		Observer: budget.ObserverFunc(func(_ context.Context, ev budget.Event) {
			if ev.Kind == budget.EventRefuse {
				svc.refused.Add(1)
			}
		})}
	st.svc = svc
	ss, err := loopback.StartHTTPServer(dependency.ServerHTTP(svc, "service"), true)
	if err != nil {
		st.Close()
		return nil, err
	}
	st.servers.Push(ss)
	st.svcURL = ss.URL
	userTransport := loopback.NewH2CTransport()
	st.servers.Push(loopback.Closer(userTransport.CloseIdleConnections))
	st.client = w.HTTPClient(userTransport, "service")
	return st, nil
}

// Close stops the dependency first: calls still waiting on it (no timeout,
// the common bug) end now instead of holding the run open, and the worker
// time they would still have held is not counted (an undercount). Then it
// stops the rest, last started first. It may be called more than once.
func (st *overloadSetup) Close() {
	if st.depSrv != nil {
		st.depSrv.Close()
		st.depSrv = nil
	}
	st.servers.CloseAll()
}

// overloadSample is what the user saw of one request.
type overloadSample struct {
	slow, measured bool // called the slow dependency; sent while it was slow
	// latency is the request's time as its user saw it.
	latency time.Duration
	ok      bool // answered within the budget
}

// driveOverload sends the case's traffic at its fixed rate, a share of it
// to the slow dependency, each request with the user's own deadline, and
// returns what each user saw. step is called as each request ends.
func driveOverload(ctx context.Context, cfg Config, v overloadVariant, st *overloadSetup, step func()) []overloadSample {
	samples := make([]overloadSample, st.total)
	var wg sync.WaitGroup
	start := time.Now()
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	for i := range st.total {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			_ = sleepCtx(ctx, d)
		}
		if ctx.Err() != nil {
			break
		}
		slow := int(float64(i+1)*cfg.SlowShare) > int(float64(i)*cfg.SlowShare)
		st.traffic.Sent.Add(1)
		measured := time.Since(start) >= cfg.Normal
		wg.Go(func() {
			defer step()
			lat, ok := userRequest(ctx, cfg, v, st, slow)
			samples[i] = overloadSample{slow: slow, measured: measured, latency: lat, ok: ok && lat <= cfg.Budget}
		})
	}
	wg.Wait()
	return samples
}

// userRequest sends one user's request: with a budget in the budget
// variant, else with the caller's own timeout. It returns the latency the
// user saw and whether the answer was a success.
func userRequest(ctx context.Context, cfg Config, v overloadVariant, st *overloadSetup, slow bool) (time.Duration, bool) {
	var rctx context.Context
	var cancel context.CancelFunc
	if v.budgetAware {
		rctx, cancel = budget.Start(ctx, cfg.Budget)
	} else {
		rctx, cancel = context.WithTimeout(ctx, cfg.Upstream)
	}
	defer cancel()
	path := "/other"
	if slow {
		path = "/slow"
	}
	t0 := time.Now()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, st.svcURL+path, nil)
	req.Header.Set(measureHeader, strconv.FormatInt(t0.Add(cfg.Budget).UnixNano(), 10))
	ok := false
	if resp, err := st.client.Do(req); err == nil {
		ok = resp.StatusCode == http.StatusOK
		_ = resp.Body.Close()
	}
	return time.Since(t0), ok
}

// measureOverload turns the samples taken while the dependency was slow, and
// what the service and the dependency measured, into the variant's figures.
func measureOverload(v overloadVariant, st *overloadSetup, samples []overloadSample) *Result {
	depWaste, _ := st.dep.Waste()
	run := &Result{variant: v, heldLate: time.Duration(st.svc.heldLate.Load()),
		depWaste: depWaste, refusedSlow: st.svc.refused.Load()}
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
	run.goodput = format.Ratio(otherOK, run.sentOther)
	run.slowOK = format.Ratio(slowOK, run.sentSlow)
	run.otherP99 = budgettest.Quantile(otherLat, 0.99)
	return run
}

// moduleVersion returns the version of the module at path that this binary
// was built with, as the build records it, or "(version unknown)" when the
// build did not record it.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				if d.Replace != nil && d.Replace.Version != "" {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return "(version unknown)"
}

// NewReport turns the overload variants' runs into their figures;
// "without budgets" is the best variant without one, so the budget is
// compared with careful code and failsafe-go, not only with the bug.
func NewReport(cfg Config, runs []*Result) *report.Overload {
	o := &report.Overload{
		Scale: cfg.Scale, Workers: cfg.Workers, RatePerSecond: cfg.Rate, SlowShare: cfg.SlowShare,
		DependencyFromMs: format.Millis(cfg.Fast), DependencyToMs: format.Millis(cfg.Slow), BudgetMs: format.Millis(cfg.Budget),
		UpstreamTimeoutMs: format.Millis(cfg.Upstream), PerCallTimeoutMs: format.Millis(cfg.PerCall), MeasuredForMs: format.Millis(cfg.SlowFor),
		Goodput: report.Goodput{ByVariant: map[string]float64{}},
	}
	for _, r := range runs {
		g := format.Round3(r.goodput)
		o.Variants = append(o.Variants, report.Variant{
			Name: r.variant.Name, Key: r.variant.key, About: r.variant.about, Goodput: g,
			SlowAnsweredRatio: format.Round3(r.slowOK), OtherP99Ms: format.Millis(r.otherP99),
			WorkerSecondsLate: format.Round3(r.heldLate.Seconds()), DependencyWastedMs: format.Millis(r.depWaste),
			RefusedBeforeStarting: r.refusedSlow, OtherRequests: r.sentOther, SlowRequests: r.sentSlow,
		})
		o.Goodput.ByVariant[r.variant.key] = g
		if r.variant.budgetAware {
			o.Goodput.WithBudgets = g
		} else {
			o.Goodput.WithoutBudgets = max(o.Goodput.WithoutBudgets, g)
		}
	}
	return o
}
