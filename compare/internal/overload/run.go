package overload

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"
)

// Run measures the capacity of the graph, then every variant at every load,
// and reports what it measured. It takes about len(Loads) × len(Variants) ×
// (Warmup + Duration + 0.5 s), or, with Requests set, the time their
// requests take at each load's rate plus 0.5 s, plus the capacity, measured at the start and
// again at the end (2 × CapacityDuration × 1.25). It stops early,
// with ctx's error, when ctx ends.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	exe := cfg.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("overload: finding this binary to start the backend: %w", err)
		}
	}
	quietFrameworks()
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	spec := backendSpec{Rounds: calibrate(), Units: cfg.units(),
		params: params{Procs: cfg.procs(), Work: time.Duration(cfg.units()) * unit, Budget: cfg.longestBudget()}}
	rep := &Report{
		Settings: map[string]string{},
		Work:     time.Duration(spec.Units) * unit,
		Procs:    spec.Procs,
		Budget:   cfg.budget(),
		Duration: cfg.duration(),
		Warmup:   cfg.warmup(),
		Requests: cfg.Requests, WarmupRequests: cfg.WarmupRequests,
	}
	for _, v := range cfg.variants() {
		rep.Settings[v] = setting(v, spec.params)
	}
	cg := newCgroups()
	defer cg.close()
	rep.Cgroups = cg.describe()
	stats := &http.Client{Transport: newTransport()}
	defer stats.CloseIdleConnections()
	for _, name := range cfg.workloads() {
		wl, err := runWorkload(ctx, cfg, cfg.workload(name), exe, spec, cg, stats, progress)
		if err != nil {
			return nil, err
		}
		rep.Workloads = append(rep.Workloads, wl)
	}
	return rep, nil
}

// runWorkload measures the capacity of the graph on one workload, then
// every variant at every load.
func runWorkload(ctx context.Context, cfg Config, w workload, exe string, spec backendSpec, cg *cgroups, stats *http.Client, progress io.Writer) (WorkloadReport, error) {
	rep := WorkloadReport{Workload: w.name, Budgets: FormatMix(w.budgets), Costs: FormatMix(w.costs), Fanout: w.fanout}
	gen := newGenerator(cfg.seed(), cfg.mix(), w)
	defer gen.close()
	measureCapacity := func() (float64, error) {
		g, err := startGraph(exe, variantNone, spec, cg, w.fanout)
		if err != nil {
			return 0, err
		}
		defer g.close()
		before, err := g.backend.stats(stats)
		if err != nil {
			return 0, err
		}
		start := time.Now()
		// A graph just started on a busy machine can answer nothing in a
		// short window (its processes are still being scheduled): measure
		// again, each time for twice as long, before giving up.
		var c float64
		for try, d := 0, cfg.capacityDuration(); try < 3 && c <= 0 && ctx.Err() == nil; try, d = try+1, 2*d {
			c = gen.closed(ctx, g.edgeURL, 4*spec.Procs+4, d/4, d)
		}
		if after, err := g.backend.stats(stats); err == nil {
			rep.CapacityCPU = append(rep.CapacityCPU, (after.CPU-before.CPU)/time.Since(start).Seconds())
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if c <= 0 {
			return 0, fmt.Errorf("overload: the graph answered nothing in three windows of closed-loop load, the last %v long", 4*cfg.capacityDuration())
		}
		return c, nil
	}
	rep.CapacityRPS = cfg.Capacity
	if rep.CapacityRPS > 0 && w.name == WorkloadMixed {
		// A given capacity is the uniform workload's: scale it by the mean
		// work.
		rep.CapacityRPS *= float64(spec.Units) * float64(unit) / float64(mean(w.costs))
	} else if rep.CapacityRPS > 0 && w.fanout > 1 {
		rep.CapacityRPS /= float64(w.fanout)
	}
	if rep.CapacityRPS <= 0 {
		fmt.Fprintf(progress, "%s: measuring capacity for %v\n", w.name, cfg.capacityDuration())
		var err error
		if rep.CapacityRPS, err = measureCapacity(); err != nil {
			return rep, err
		}
	}
	names := cfg.variants()
	for li, load := range cfg.loads() {
		// Each load starts with another variant, so that none always runs
		// first (or last) while the machine's other work changes; the report
		// keeps the canonical order.
		first := len(rep.Runs)
		for k := range names {
			name := names[(li+k)%len(names)]
			rate := load * rep.CapacityRPS
			fmt.Fprintf(progress, "%s: %s at %.1fx (%.0f requests/s)\n", w.name, name, load, rate)
			g, err := startGraph(exe, name, spec, cg, w.fanout)
			if err != nil {
				return rep, err
			}
			gen.reseed(cfg.seed() + uint64(li+1)*0x9e3779b97f4a7c15)
			before, err := g.backend.stats(stats)
			if err != nil {
				g.close()
				return rep, err
			}
			start := time.Now()
			sends, measured := gen.open(ctx, g.edgeURL, rate, span{cfg.warmup(), cfg.duration(), cfg.WarmupRequests, cfg.Requests})
			st, err := g.backend.stats(stats)
			wall := time.Since(start)
			g.close()
			if err != nil {
				return rep, err
			}
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			res := summarize(name, load, rep.CapacityRPS, measured, sends, st.Records, st.CPU-before.CPU)
			res.Workload = w.name
			res.BackendCPU = (st.CPU - before.CPU) / wall.Seconds()
			rep.Runs = append(rep.Runs, res)
		}
		slices.SortStableFunc(rep.Runs[first:], func(a, b Result) int {
			return slices.Index(names, a.Variant) - slices.Index(names, b.Variant)
		})
	}
	if cfg.Capacity <= 0 {
		fmt.Fprintf(progress, "%s: measuring capacity again for %v\n", w.name, cfg.capacityDuration())
		var err error
		if rep.CapacityEndRPS, err = measureCapacity(); err != nil {
			return rep, err
		}
	}
	return rep, nil
}
