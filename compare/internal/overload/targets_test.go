package overload

import (
	"strings"
	"testing"
)

// met is a report in which the budget variant meets every target, on two
// workloads.
func met() *Report {
	r := &Report{}
	for _, w := range []string{WorkloadUniform, WorkloadMixed} {
		wl := WorkloadReport{Workload: w}
		for _, v := range Variants() {
			for _, load := range []float64{0.8, 1.5, 3} {
				x := Result{Variant: v, Workload: w, Load: load, GoodputRPS: 100, GoodputOfCapacity: 0.5, P99Ms: 40,
					CriticalInBudget: 0.5, Sent: 1000, ByBudget: map[string]Group{"100ms": {Sent: 300, InBudget: 0.4}, "3s": {Sent: 700, InBudget: 0.5}}}
				x.Outcomes[inBudget] = 1000
				if v == variantBudget {
					x.GoodputRPS, x.GoodputOfCapacity, x.CriticalInBudget = 200, 0.98, 1
					x.ByBudget = map[string]Group{"100ms": {Sent: 300, InBudget: 0.9}, "3s": {Sent: 700, InBudget: 0.99}}
				}
				wl.Runs = append(wl.Runs, x)
			}
		}
		r.Workloads = append(r.Workloads, wl)
	}
	return r
}

// TestMisses judges made-up reports: one meeting every target is clean, and
// each target missed by a hair, on either workload, or not measured, is
// named.
func TestMisses(t *testing.T) {
	if m := met().Misses(); len(m) != 0 {
		t.Fatalf("a report meeting every target: %q", m)
	}
	set := func(workload, variant string, load float64, f func(*Result)) func(*Report) {
		return func(r *Report) {
			for i := range r.Workloads {
				for j := range r.Workloads[i].Runs {
					x := &r.Workloads[i].Runs[j]
					if x.Workload == workload && x.Variant == variant && x.Load == load {
						f(x)
					}
				}
			}
		}
	}
	for _, c := range []struct {
		name string
		edit func(*Report)
		want string
	}{
		{"goodput of capacity", set("mixed", "budget", 3, func(x *Result) { x.GoodputOfCapacity = 0.969 }), "mixed: budget at 3x: goodput 0.969 of the capacity"},
		{"goodput of a peer", set("uniform", "failsafe-adaptive", 1.5, func(x *Result) { x.GoodputRPS = 200.5 }), "uniform: budget at 1.5x: goodput 200.0/s, target >= failsafe-adaptive's 200.5/s"},
		{"budget group", set("mixed", "failsafe-priority", 3, func(x *Result) { x.ByBudget["100ms"] = Group{Sent: 300, InBudget: 0.901} }), "mixed: budget at 3x: 0.900 of the 100ms group in budget, target >= failsafe-priority's 0.901"},
		{"critical", set("mixed", "budget", 1.5, func(x *Result) { x.CriticalInBudget = 0.949 }), "at 1.5x: 0.949 of critical"},
		{"waste", set("uniform", "budget", 3, func(x *Result) { x.WastedCPUShare = 0.021 }), "0.021 of the backend's work wasted"},
		{"refused at 0.8x", set("uniform", "budget", 0.8, func(x *Result) { x.Outcomes[inBudget], x.Outcomes[refused] = 989, 11 }), "budget at 0.8x: refused 0.011"},
		{"p99 at 0.8x", set("mixed", "budget", 0.8, func(x *Result) { x.P99Ms = 40.1 }), "mixed: budget at 0.8x: p99 40.1 ms"},
		{"not measured", func(r *Report) { r.Workloads[0].Runs = r.Workloads[0].Runs[:0] }, "uniform: 3x targets: not measured"},
		{"no workload", func(r *Report) { r.Workloads = nil }, "no workload measured"},
	} {
		r := met()
		c.edit(r)
		m := r.Misses()
		if len(m) == 0 || !strings.Contains(strings.Join(m, "\n"), c.want) {
			t.Errorf("%s: misses %q, want one saying %q", c.name, m, c.want)
		}
	}
}
