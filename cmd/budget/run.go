package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/timebudget/budget"
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
// returns what was measured.
func runPattern(ctx context.Context, cfg *demoConfig, sc *scenario, pat pattern, prog *progress) (_ *patternRun, err error) {
	tr := &traffic{total: int64(cfg.requests)}
	var servers []server
	defer func() {
		for _, s := range slices.Backward(servers) {
			s.close()
		}
	}()
	transport := newHTTPTransport()
	defer transport.CloseIdleConnections()
	w := wiring{budgetAware: pat.budgetAware}

	deps := map[string]*dependency{}
	urls := map[string]string{}
	conns := map[string]*grpc.ClientConn{}
	for _, ds := range sc.deps {
		d := newDependency(ds.name, ds.base, ds.cascade, cfg.faults[ds.name], tr)
		deps[ds.name] = d
		switch ds.proto {
		case overHTTP:
			s, err := startDependencyHTTP(d, ds.paths)
			if err != nil {
				return nil, err
			}
			servers = append(servers, s)
			urls[ds.name] = s.url
		case overGRPC:
			s, err := startDependencyGRPC(d)
			if err != nil {
				return nil, err
			}
			servers = append(servers, s)
			conn, err := grpc.NewClient(s.addr, w.grpcDialOptions()...)
			if err != nil {
				return nil, err
			}
			servers = append(servers, closer(func() { _ = conn.Close() }))
			conns[ds.name] = conn
		}
	}

	e := &edge{
		pat: pat, perCall: sc.perCall(cfg.budget), reserve: answerReserve(cfg.budget),
		ledgers: map[int]*budget.Ledger{}, refusals: map[string]int{},
	}
	for _, ss := range sc.stages {
		st := edgeStage{name: ss.name}
		for _, rs := range ss.rungs {
			name := rs.name
			if len(ss.rungs) > 1 {
				name = ss.name + "." + rs.name
			}
			rg := edgeRung{name: rs.name, op: &budget.Op{Name: name, Prior: rs.base, MinSamples: opMinSamples,
				Estimator: budget.Estimator{Window: opWindow}}}
			switch {
			case rs.dep == "":
				rg.op = cacheOp(name)
			case urls[rs.dep] != "":
				rg.hop = httpHop{client: w.httpClient(transport, name), url: urls[rs.dep] + rs.path}
			case conns[rs.dep] != nil:
				rg.hop = grpcHop{conn: conns[rs.dep]}
			default:
				return nil, fmt.Errorf("scenario %s: rung %s calls unknown dependency %q", sc.key, name, rs.dep)
			}
			st.rungs = append(st.rungs, rg)
		}
		if pat.admission && len(st.rungs) > 1 {
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
	var eh http.Handler = e
	if pat.budgetAware {
		eh = edgeHTTP(e, cfg.budget)
	}
	es, err := startHTTP(eh)
	if err != nil {
		return nil, err
	}
	servers = append(servers, es)

	userTransport := newHTTPTransport()
	defer userTransport.CloseIdleConnections()
	prog.begin(sc.key, pat.name, cfg.requests)
	start := time.Now()
	outs := load(ctx, &http.Client{Transport: userTransport}, es.url, cfg.requests, cfg.concurrency,
		safetyLimit(cfg.budget), tr, prog.step)
	wall := time.Since(start)

	// Stop everything now: work still running is measured up to this moment.
	for _, s := range slices.Backward(servers) {
		s.close()
	}
	servers = nil
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	run := &patternRun{pattern: pat, outcomes: outs, wall: wall, refusals: e.refusals, ledgers: e.ledgers}
	if pat.perCall {
		run.perCall = e.perCall
	}
	for _, ds := range sc.deps {
		d := deps[ds.name]
		run.deps = append(run.deps, depMeasure{
			name: ds.name, proto: ds.proto, cascade: ds.cascade, calls: d.calls.Load(),
			waste: time.Duration(d.waste.total.Load()), wasteCalls: d.waste.calls.Load(),
		})
	}
	return run, nil
}

// opMinSamples is how many measurements an Op needs before they replace its
// prior. Lower than the library's default so that the demo's short runs show
// admission after it has learned, not only before.
const opMinSamples = 10

// opWindow is the length of each of the two rotating measurement windows of
// the demo's Ops: the library's default of 10 s scaled down like the rest of
// the demo's times, so that a dependency that slows down part-way through a
// run of a few seconds is seen as slow within that run.
const opWindow = time.Second

// cachePlan is the time the ladder holds back for the cache rung: well over
// the cache's latency, so that the rung before it can run until the hold
// and the cache still has time to answer.
const cachePlan = 10 * time.Millisecond

// cacheOp returns the Op of the edge's cache rung. Its need is planned, not
// measured (its Prior, with more samples required than a run takes): the
// ladder holds that much back for it. As the last rung it is tried whenever
// any time is left.
func cacheOp(name string) *budget.Op {
	return &budget.Op{Name: name, Prior: cachePlan, MinSamples: math.MaxInt}
}

// answerReserve is the time the admission pattern holds back to write the
// answer: a tenth of the budget, at least 15 ms. The ladder keeps the cache
// rung's own time on top of it.
func answerReserve(b time.Duration) time.Duration { return max(b/10, 15*time.Millisecond) }

// closer adapts a function to server.
type closer func()

func (c closer) close() { c() }
