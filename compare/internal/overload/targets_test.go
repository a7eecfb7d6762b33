package overload

import (
	"strings"
	"testing"
)

// met is a report in which the budget variant meets every target.
func met() *Report {
	r := &Report{}
	for _, v := range Variants() {
		for _, load := range []float64{0.8, 1.5, 3} {
			x := Result{Variant: v, Load: load, GoodputRPS: 100, GoodputOfCapacity: 0.5, P99Ms: 40,
				CriticalInBudget: 0.5, Sent: 1000}
			x.Outcomes[inBudget] = 1000
			if v == "budget" {
				x.GoodputRPS, x.GoodputOfCapacity, x.CriticalInBudget = 200, 0.98, 1
			}
			r.Runs = append(r.Runs, x)
		}
	}
	return r
}

// TestMisses judges made-up reports: one meeting every target is clean, and
// each target missed by a hair, or not measured, is named.
func TestMisses(t *testing.T) {
	if m := met().Misses(); len(m) != 0 {
		t.Fatalf("a report meeting every target: %q", m)
	}
	set := func(variant string, load float64, f func(*Result)) func(*Report) {
		return func(r *Report) {
			for i := range r.Runs {
				if r.Runs[i].Variant == variant && r.Runs[i].Load == load {
					f(&r.Runs[i])
				}
			}
		}
	}
	for _, c := range []struct {
		name string
		edit func(*Report)
		want string
	}{
		{"goodput of capacity", set("budget", 3, func(x *Result) { x.GoodputOfCapacity = 0.949 }), "0.949 of the capacity"},
		{"goodput of the best other", set("go-zero", 3, func(x *Result) { x.GoodputRPS = 182 }), "1.1 × go-zero's 182.0/s"},
		{"admitted missed", set("budget", 3, func(x *Result) { x.AdmittedMissedDeadline = 0.011 }), "0.011 of admitted"},
		{"critical at 3x", set("budget", 3, func(x *Result) { x.CriticalInBudget = 0.949 }), "at 3x: 0.949 of critical"},
		{"critical at 1.5x", set("budget", 1.5, func(x *Result) { x.CriticalInBudget = 0.989 }), "at 1.5x: 0.989 of critical"},
		{"refused at 0.8x", set("kratos-bbr", 0.8, func(x *Result) { x.Outcomes[inBudget], x.Outcomes[refused] = 999, 1 }), "kratos-bbr at 0.8x: refused 0.001"},
		{"p99 at 0.8x", set("budget", 0.8, func(x *Result) { x.P99Ms = 42.1 }), "p99 42.1 ms"},
		{"not measured", func(r *Report) { r.Runs = r.Runs[:0] }, "3x targets: not measured"},
	} {
		r := met()
		c.edit(r)
		m := r.Misses()
		if len(m) == 0 || !strings.Contains(strings.Join(m, "\n"), c.want) {
			t.Errorf("%s: misses %q, want one saying %q", c.name, m, c.want)
		}
	}
}
