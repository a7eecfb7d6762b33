package sim

import (
	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// model is a topology compiled for the engine: services by index, calls with
// their rungs resolved, faults applied.
type model struct {
	names    []string
	svcs     []svcInfo
	pools    int // number of worker pools (one per host)
	poolSize []int32
	entry    int32
	budget   int64
	// ops are the dependencies, one per caller and callee: in the
	// admission pattern each gets a budget.Op of its own, as each service
	// would hold one per dependency it calls.
	ops []opInfo
}

// opInfo is one dependency: a service calling another. Its calls' timeouts
// stay with the calls (a service may call a dependency twice, with two
// timeouts), so its Op has no Cap.
type opInfo struct {
	caller, callee int32
}

type svcInfo struct {
	lat         lognormal
	calls       []callInfo
	pool        int32
	cancellable bool
	fault       Fault
	// faultAt is fault's index in Config.Faults, or -1 for none.
	faultAt int32
	// prior is what admission assumes the service needs before it has
	// measured it: its declared p99 plus its callees' priors, each weighted
	// by the share of requests that make the call.
	prior int64
}

type callInfo struct {
	rungs   []rungInfo
	retries int
	backoff int64
	share   float64
}

// rungInfo is the primary call (rung 0) or one fallback.
type rungInfo struct {
	svc     int32 // -1 for a local rung
	op      int32 // index in model.ops, for a call
	timeout int64 // 0 for none
	local   lognormal
	// need is the rung's time to keep in reserve while earlier rungs run,
	// in the admission pattern: a local rung's p99 plus a millisecond of
	// slack, a call's prior.
	need int64
}

func compile(t *topology.Topology, cfg Config) *model {
	m := &model{names: t.Names, svcs: make([]svcInfo, len(t.Names)), budget: int64(t.Budget)}
	idx := make(map[string]int32, len(t.Names))
	for i, n := range t.Names {
		idx[n] = int32(i)
	}
	m.entry = idx[t.Entry]
	pools := map[string]int32{}
	faults := make(map[string]int, len(cfg.Faults))
	for k, f := range cfg.Faults {
		faults[f.Service] = k
	}
	for i, n := range t.Names {
		s := t.Services[n]
		host := t.HostOf(n)
		p, ok := pools[host]
		if !ok {
			p = int32(len(m.poolSize))
			pools[host] = p
			w := t.Services[host].Workers
			if w == 0 {
				w = cfg.Workers
			}
			m.poolSize = append(m.poolSize, int32(w))
		}
		si := svcInfo{lat: fit(s.Latency), pool: p, cancellable: s.Cancellable, faultAt: -1}
		// Of a fault on the service and one on its host, the later given
		// applies, as when every fault was scanned for every service
		// (quadratic when every service has one).
		at := -1
		for _, name := range []string{host, n} {
			if k, ok := faults[name]; ok && k > at {
				at = k
			}
		}
		if at >= 0 {
			si.fault, si.faultAt = cfg.Faults[at], int32(at)
		}
		for _, c := range s.Calls {
			ci := callInfo{retries: c.Retries, backoff: int64(c.Backoff), share: c.Share}
			ci.rungs = append(ci.rungs, rungInfo{svc: idx[c.To], timeout: int64(c.Timeout)})
			for _, f := range c.Fallback {
				if f.To != "" {
					ci.rungs = append(ci.rungs, rungInfo{svc: idx[f.To], timeout: int64(f.Timeout)})
				} else {
					ci.rungs = append(ci.rungs, rungInfo{svc: -1, local: fit(f.Latency), need: int64(f.Latency.P99) + 1e6})
				}
			}
			si.calls = append(si.calls, ci)
		}
		m.svcs[i] = si
	}
	m.pools = len(m.poolSize)
	opOf := map[[2]int32]int32{}
	for i := range m.svcs {
		for _, c := range m.svcs[i].calls {
			for k := range c.rungs {
				r := &c.rungs[k]
				if r.svc < 0 {
					continue
				}
				key := [2]int32{int32(i), r.svc}
				o, ok := opOf[key]
				if !ok {
					o = int32(len(m.ops))
					opOf[key] = o
					m.ops = append(m.ops, opInfo{caller: int32(i), callee: r.svc})
				}
				r.op = o
			}
		}
	}
	// Priors, callees first: the graph has no cycle (Validate checked).
	order, _ := t.Order()
	done := make([]bool, len(m.svcs))
	var prior func(i int32) int64
	prior = func(i int32) int64 {
		if done[i] {
			return m.svcs[i].prior
		}
		s := &m.svcs[i]
		p := int64(t.Services[t.Names[i]].Latency.P99)
		for _, c := range s.calls {
			p += int64(c.share * float64(prior(c.rungs[0].svc)))
		}
		s.prior, done[i] = p, true
		return p
	}
	for _, n := range order {
		prior(idx[n])
	}
	for i := range m.svcs {
		prior(int32(i))
		for _, c := range m.svcs[i].calls {
			for k := range c.rungs {
				if c.rungs[k].svc >= 0 {
					c.rungs[k].need = prior(c.rungs[k].svc)
				}
			}
		}
	}
	return m
}
