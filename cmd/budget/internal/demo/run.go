package demo

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/cmd/budget/internal/dependency"
	"github.com/timebudget/budget/cmd/budget/internal/load"
	"github.com/timebudget/budget/cmd/budget/internal/loopback"
	"github.com/timebudget/budget/cmd/budget/internal/pattern"
	"github.com/timebudget/budget/cmd/budget/internal/postgres"
	"github.com/timebudget/budget/cmd/budget/internal/progress"
	"github.com/timebudget/budget/cmd/budget/internal/scenario"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/pgxbudget"
	"google.golang.org/grpc"
)

// patternRun is what one pattern measured on one scenario.
type patternRun struct {
	pattern  pattern.Pattern
	perCall  time.Duration // the per-call timeout, in the per-call pattern
	outcomes []load.Outcome
	wall     time.Duration
	deps     []depMeasure
	refusals map[string]int         // stage → attempts refused before they started
	ledgers  map[int]*budget.Ledger // request index → its spend ledger (budget patterns)
	db       *postgres.Measure      // the database hop, when it ran
}

// depMeasure is what one dependency measured of itself during a run.
type depMeasure struct {
	name       string
	proto      scenario.Protocol
	cascade    bool
	calls      int64
	waste      time.Duration // work done after the caller went away
	wasteCalls int64         // calls that kept working after their caller went away
}

// runPattern starts a scenario's dependencies and edge on loopback, sends the
// configured traffic through them under one pattern, stops everything and
// returns what was measured: setup (startDependencies, newEdge), drive
// (load) and measure (measurePattern).
func runPattern(ctx context.Context, cfg *demoConfig, sc *scenario.Scenario, pat pattern.Pattern, prog *progress.Progress) (*patternRun, error) {
	var servers loopback.ServerStack
	defer servers.CloseAll()
	w := loopback.Wiring{BudgetAware: pat.Spend.BudgetAware()}
	tr := &dependency.Traffic{Total: int64(cfg.requests)}
	deps, err := startDependencies(sc, cfg.Faults, tr, w, &servers)
	if err != nil {
		return nil, err
	}
	if cfg.Postgres != "" && sc.HasDep(postgres.Dependency) {
		tag := fmt.Sprintf("budget-demo-%s-%s-%d", sc.Key, pat.Key, time.Now().UnixNano())
		_, detach := pat.Spend.(pattern.NoTimeout)
		if deps.db, err = postgres.Open(ctx, cfg.Postgres, tag, w.BudgetAware, detach); err != nil {
			return nil, err
		}
		defer deps.db.Finish()
	}
	transport := loopback.NewHTTPTransport()
	servers.Push(loopback.Closer(transport.CloseIdleConnections))
	e, err := newEdge(sc, pat, cfg.Budget, deps, w, transport)
	if err != nil {
		return nil, err
	}
	var eh http.Handler = e
	if w.BudgetAware {
		// The live page shows the admission pattern's Ops, whose measurements
		// decide; its budgets, refusals and waterfalls are the ones to watch.
		var page *httpbudget.DebugPage
		if _, ok := pat.Spend.(pattern.Admission); ok && cfg.page != nil {
			page = cfg.page
			for _, st := range e.Stages {
				for _, rg := range st.Rungs {
					page.Register(rg.Op)
				}
			}
		}
		eh = pattern.EdgeHTTP(e, cfg.Budget, page)
	}
	es, err := loopback.StartHTTP(eh)
	if err != nil {
		return nil, err
	}
	servers.Push(es)

	userTransport := loopback.NewHTTPTransport()
	defer userTransport.CloseIdleConnections()
	prog.Begin(sc.Key, pat.Name, cfg.requests)
	start := time.Now()
	outs := load.Run(ctx, &http.Client{Transport: userTransport}, es.URL, cfg.requests, cfg.concurrency,
		pattern.SafetyLimit(cfg.Budget), tr, prog.Step)
	wall := time.Since(start)

	// Stop everything now: work still running is measured up to this moment.
	servers.CloseAll()
	if deps.db != nil {
		deps.db.Finish()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return measurePattern(pat, e, deps, outs, wall), nil
}

// runningDeps are a scenario's dependencies, started on loopback, with the
// address the edge reaches each at.
type runningDeps struct {
	order []*dependency.Dependency    // in the scenario's order
	urls  map[string]string           // HTTP dependencies: name → base URL
	conns map[string]*grpc.ClientConn // gRPC dependencies: name → channel
	// db, when set, does the work of dbDependency in PostgreSQL.
	db *postgres.Run
}

// byName returns the dependency called name, or nil.
func (d *runningDeps) byName(name string) *dependency.Dependency {
	for _, dep := range d.order {
		if dep.Name == name {
			return dep
		}
	}
	return nil
}

// startDependencies starts every dependency of sc with its fault, each
// served over its protocol, and pushes what must be stopped onto servers.
func startDependencies(sc *scenario.Scenario, faults map[string]scenario.Fault, tr *dependency.Traffic, w loopback.Wiring, servers *loopback.ServerStack) (*runningDeps, error) {
	deps := &runningDeps{urls: map[string]string{}, conns: map[string]*grpc.ClientConn{}}
	for _, ds := range sc.Deps {
		d := dependency.New(ds.Name, ds.Base, ds.Cascade, faults[ds.Name], tr)
		d.Proto = ds.Proto
		deps.order = append(deps.order, d)
		switch ds.Proto {
		case scenario.OverHTTP:
			s, err := dependency.StartDependencyHTTP(d, ds.Paths)
			if err != nil {
				return nil, err
			}
			servers.Push(s)
			deps.urls[ds.Name] = s.URL
		case scenario.OverGRPC:
			s, err := dependency.StartDependencyGRPC(d)
			if err != nil {
				return nil, err
			}
			servers.Push(s)
			conn, err := grpc.NewClient(s.Addr, w.GrpcDialOptions()...)
			if err != nil {
				return nil, err
			}
			servers.Push(loopback.Closer(func() { _ = conn.Close() }))
			deps.conns[ds.Name] = conn
		}
	}
	return deps, nil
}

// newEdge builds the edge of sc under pat: one Op per rung, measured in
// every pattern, and a ladder for each stage with several rungs.
func newEdge(sc *scenario.Scenario, pat pattern.Pattern, b time.Duration, deps *runningDeps, w loopback.Wiring, transport *http.Transport) (*pattern.Edge, error) {
	e := &pattern.Edge{
		Pat: pat, PerCall: sc.PerCall(b), Reserve: answerReserve(b),
		Ledgers: map[int]*budget.Ledger{}, Refusals: map[string]int{},
	}
	for _, ss := range sc.Stages {
		st := pattern.Stage{Name: ss.Name}
		for _, rs := range ss.Rungs {
			rg, err := newRung(ss, rs, deps, w, transport)
			if err != nil {
				return nil, fmt.Errorf("scenario %s: %w", sc.Key, err)
			}
			st.Rungs = append(st.Rungs, rg)
		}
		if len(st.Rungs) > 1 {
			st.Ladder = new(budget.Ladder[string])
			for _, rg := range st.Rungs {
				st.Ladder.Rungs = append(st.Ladder.Rungs, budget.Rung[string]{
					Op: rg.Op,
					Fn: func(ctx context.Context) (string, error) { return rg.Name, rg.Call(ctx) },
				})
			}
		}
		e.Stages = append(e.Stages, st)
	}
	return e, nil
}

// newRung builds one rung of stage ss: a hop to its dependency over the
// dependency's protocol, or the edge's cache when it names none.
func newRung(ss scenario.StageSpec, rs scenario.RungSpec, deps *runningDeps, w loopback.Wiring, transport *http.Transport) (pattern.Rung, error) {
	name := rs.Name
	if len(ss.Rungs) > 1 {
		name = ss.Name + "." + rs.Name
	}
	// Each Op is configured as a user would: a name and the dependency's
	// typical latency as its prior; everything else is the library's default.
	rg := pattern.Rung{Name: rs.Name, Op: &budget.Op{Name: name, Prior: rs.Base}}
	switch {
	case rs.Dep == "":
		rg.Op = pattern.CacheOp(name)
	case rs.Dep == postgres.Dependency && deps.db != nil:
		rg.Hop = postgres.Hop{DB: deps.db, Dep: deps.byName(rs.Dep)}
		rg.Op.Expired = pgxbudget.IsTimeout
	case deps.urls[rs.Dep] != "":
		rg.Hop = dependency.HTTPHop{Client: w.HTTPClient(transport, name), URL: deps.urls[rs.Dep] + rs.Path}
	case deps.conns[rs.Dep] != nil:
		rg.Hop = dependency.GrpcHop{Conn: deps.conns[rs.Dep]}
	default:
		return pattern.Rung{}, fmt.Errorf("rung %s calls unknown dependency %q", name, rs.Dep)
	}
	return rg, nil
}

// measurePattern gathers what the edge, the dependencies and the load
// generator measured of one run.
func measurePattern(pat pattern.Pattern, e *pattern.Edge, deps *runningDeps, outs []load.Outcome, wall time.Duration) *patternRun {
	run := &patternRun{pattern: pat, outcomes: outs, wall: wall, refusals: e.Refusals, ledgers: e.Ledgers}
	if _, ok := pat.Spend.(pattern.PerCallTimeouts); ok {
		run.perCall = e.PerCall
	}
	var dbm postgres.Measure
	if deps.db != nil {
		dbm = deps.db.Track.Measure()
		run.db = &dbm
	}
	for _, d := range deps.order {
		m := depMeasure{name: d.Name, proto: d.Proto, cascade: d.Cascade, calls: d.Calls()}
		m.waste, m.wasteCalls = d.Waste()
		if d.Name == postgres.Dependency && run.db != nil {
			// Its work ran in PostgreSQL: the waste is the server's time
			// after the callers left, as the sampler saw it.
			m.calls, m.waste, m.wasteCalls = int64(dbm.Statements), dbm.Total(), int64(dbm.RanOn())
		}
		run.deps = append(run.deps, m)
	}
	return run
}

// answerReserve is the time the admission pattern holds back to write the
// answer: a tenth of the budget, at least 15 ms. The ladder keeps the cache
// rung's own time on top of it.
func answerReserve(b time.Duration) time.Duration { return max(b/10, 15*time.Millisecond) }
