package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/pgxbudget"
	"google.golang.org/grpc"
)

// patternRun is what one pattern measured on one scenario.
type patternRun struct {
	pattern  pattern
	perCall  time.Duration // the per-call timeout, in the per-call pattern
	outcomes []outcome
	wall     time.Duration
	deps     []depMeasure
	refusals map[string]int         // stage → attempts refused before they started
	ledgers  map[int]*budget.Ledger // request index → its spend ledger (budget patterns)
	db       *dbMeasure             // the database hop, when it ran
}

// depMeasure is what one dependency measured of itself during a run.
type depMeasure struct {
	name       string
	proto      protocol
	cascade    bool
	calls      int64
	waste      time.Duration // work done after the caller went away
	wasteCalls int64         // calls that kept working after their caller went away
}

// runPattern starts a scenario's dependencies and edge on loopback, sends the
// configured traffic through them under one pattern, stops everything and
// returns what was measured: setup (startDependencies, newEdge), drive
// (load) and measure (measurePattern).
func runPattern(ctx context.Context, cfg *demoConfig, sc *scenario, pat pattern, prog *progress) (*patternRun, error) {
	var servers serverStack
	defer servers.closeAll()
	w := wiring{budgetAware: pat.spend.budgetAware()}
	tr := &traffic{total: int64(cfg.requests)}
	deps, err := startDependencies(sc, cfg.faults, tr, w, &servers)
	if err != nil {
		return nil, err
	}
	if cfg.postgres != "" && sc.hasDep(dbDependency) {
		tag := fmt.Sprintf("budget-demo-%s-%s-%d", sc.key, pat.key, time.Now().UnixNano())
		_, detach := pat.spend.(noTimeout)
		if deps.db, err = openDB(ctx, cfg.postgres, tag, w.budgetAware, detach); err != nil {
			return nil, err
		}
		defer deps.db.finish()
	}
	transport := newHTTPTransport()
	servers.push(closer(transport.CloseIdleConnections))
	e, err := newEdge(sc, pat, cfg.budget, deps, w, transport)
	if err != nil {
		return nil, err
	}
	var eh http.Handler = e
	if w.budgetAware {
		// The live page shows the admission pattern's Ops, whose measurements
		// decide; its budgets, refusals and waterfalls are the ones to watch.
		var page *httpbudget.DebugPage
		if _, ok := pat.spend.(admission); ok && cfg.page != nil {
			page = cfg.page
			for _, st := range e.stages {
				for _, rg := range st.rungs {
					page.Register(rg.op)
				}
			}
		}
		eh = edgeHTTP(e, cfg.budget, page)
	}
	es, err := startHTTP(eh)
	if err != nil {
		return nil, err
	}
	servers.push(es)

	userTransport := newHTTPTransport()
	defer userTransport.CloseIdleConnections()
	prog.begin(sc.key, pat.name, cfg.requests)
	start := time.Now()
	outs := load(ctx, &http.Client{Transport: userTransport}, es.url, cfg.requests, cfg.concurrency,
		safetyLimit(cfg.budget), tr, prog.step)
	wall := time.Since(start)

	// Stop everything now: work still running is measured up to this moment.
	servers.closeAll()
	if deps.db != nil {
		deps.db.finish()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return measurePattern(pat, e, deps, outs, wall), nil
}

// runningDeps are a scenario's dependencies, started on loopback, with the
// address the edge reaches each at.
type runningDeps struct {
	order []*dependency               // in the scenario's order
	urls  map[string]string           // HTTP dependencies: name → base URL
	conns map[string]*grpc.ClientConn // gRPC dependencies: name → channel
	// db, when set, does the work of dbDependency in PostgreSQL.
	db *dbRun
}

// byName returns the dependency called name, or nil.
func (d *runningDeps) byName(name string) *dependency {
	for _, dep := range d.order {
		if dep.name == name {
			return dep
		}
	}
	return nil
}

// startDependencies starts every dependency of sc with its fault, each
// served over its protocol, and pushes what must be stopped onto servers.
func startDependencies(sc *scenario, faults map[string]fault, tr *traffic, w wiring, servers *serverStack) (*runningDeps, error) {
	deps := &runningDeps{urls: map[string]string{}, conns: map[string]*grpc.ClientConn{}}
	for _, ds := range sc.deps {
		d := newDependency(ds.name, ds.base, ds.cascade, faults[ds.name], tr)
		d.proto = ds.proto
		deps.order = append(deps.order, d)
		switch ds.proto {
		case overHTTP:
			s, err := startDependencyHTTP(d, ds.paths)
			if err != nil {
				return nil, err
			}
			servers.push(s)
			deps.urls[ds.name] = s.url
		case overGRPC:
			s, err := startDependencyGRPC(d)
			if err != nil {
				return nil, err
			}
			servers.push(s)
			conn, err := grpc.NewClient(s.addr, w.grpcDialOptions()...)
			if err != nil {
				return nil, err
			}
			servers.push(closer(func() { _ = conn.Close() }))
			deps.conns[ds.name] = conn
		}
	}
	return deps, nil
}

// newEdge builds the edge of sc under pat: one Op per rung, measured in
// every pattern, and a ladder for each stage with several rungs.
func newEdge(sc *scenario, pat pattern, b time.Duration, deps *runningDeps, w wiring, transport *http.Transport) (*edge, error) {
	e := &edge{
		pat: pat, perCall: sc.perCall(b), reserve: answerReserve(b),
		ledgers: map[int]*budget.Ledger{}, refusals: map[string]int{},
	}
	for _, ss := range sc.stages {
		st := edgeStage{name: ss.name}
		for _, rs := range ss.rungs {
			rg, err := newRung(ss, rs, deps, w, transport)
			if err != nil {
				return nil, fmt.Errorf("scenario %s: %w", sc.key, err)
			}
			st.rungs = append(st.rungs, rg)
		}
		if len(st.rungs) > 1 {
			st.ladder = new(budget.Ladder[string])
			for _, rg := range st.rungs {
				st.ladder.Rungs = append(st.ladder.Rungs, budget.Rung[string]{
					Op: rg.op,
					Fn: func(ctx context.Context) (string, error) { return rg.name, rg.call(ctx) },
				})
			}
		}
		e.stages = append(e.stages, st)
	}
	return e, nil
}

// newRung builds one rung of stage ss: a hop to its dependency over the
// dependency's protocol, or the edge's cache when it names none.
func newRung(ss stageSpec, rs rungSpec, deps *runningDeps, w wiring, transport *http.Transport) (edgeRung, error) {
	name := rs.name
	if len(ss.rungs) > 1 {
		name = ss.name + "." + rs.name
	}
	// Each Op is configured as a user would: a name and the dependency's
	// typical latency as its prior; everything else is the library's default.
	rg := edgeRung{name: rs.name, op: &budget.Op{Name: name, Prior: rs.base}}
	switch {
	case rs.dep == "":
		rg.op = cacheOp(name)
	case rs.dep == dbDependency && deps.db != nil:
		rg.hop = dbHop{db: deps.db, dep: deps.byName(rs.dep)}
		rg.op.Expired = pgxbudget.IsTimeout
	case deps.urls[rs.dep] != "":
		rg.hop = httpHop{client: w.httpClient(transport, name), url: deps.urls[rs.dep] + rs.path}
	case deps.conns[rs.dep] != nil:
		rg.hop = grpcHop{conn: deps.conns[rs.dep]}
	default:
		return edgeRung{}, fmt.Errorf("rung %s calls unknown dependency %q", name, rs.dep)
	}
	return rg, nil
}

// measurePattern gathers what the edge, the dependencies and the load
// generator measured of one run.
func measurePattern(pat pattern, e *edge, deps *runningDeps, outs []outcome, wall time.Duration) *patternRun {
	run := &patternRun{pattern: pat, outcomes: outs, wall: wall, refusals: e.refusals, ledgers: e.ledgers}
	if _, ok := pat.spend.(perCallTimeouts); ok {
		run.perCall = e.perCall
	}
	var dbm dbMeasure
	if deps.db != nil {
		dbm = deps.db.track.measure()
		run.db = &dbm
	}
	for _, d := range deps.order {
		m := depMeasure{name: d.name, proto: d.proto, cascade: d.cascade, calls: d.calls()}
		m.waste, m.wasteCalls = d.waste()
		if d.name == dbDependency && run.db != nil {
			// Its work ran in PostgreSQL: the waste is the server's time
			// after the callers left, as the sampler saw it.
			m.calls, m.waste, m.wasteCalls = int64(dbm.statements), dbm.total(), int64(dbm.ranOn())
		}
		run.deps = append(run.deps, m)
	}
	return run
}

// answerReserve is the time the admission pattern holds back to write the
// answer: a tenth of the budget, at least 15 ms. The ladder keeps the cache
// rung's own time on top of it.
func answerReserve(b time.Duration) time.Duration { return max(b/10, 15*time.Millisecond) }
