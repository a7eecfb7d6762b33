package overload

import (
	"fmt"
	"slices"
)

// Misses returns, one line each, the targets that the budget
// variant missed in r, judged exactly (no margin), on every workload: at
// 1.5× and 3× the capacity, goodput at least 0.97 of the workload's
// capacity and at least every other variant's, each budget group's share in
// budget at least the best other variant's for that group, at least 95 % of
// critical requests in budget, and at most 2 % of the backend's work wasted
// on requests not answered in budget; at 0.8×, at most 1 % refused and a
// p99 no worse than no protection's. A target whose runs are not in r (a
// run with other -loads or -variants) is reported as not measured. An empty
// result means every target was met.
func (r *Report) Misses() []string {
	var miss []string
	if len(r.Workloads) == 0 {
		return []string{"no workload measured"}
	}
	for _, wl := range r.Workloads {
		miss = append(miss, wl.misses()...)
	}
	return miss
}

func (wl WorkloadReport) misses() []string {
	var miss []string
	at := func(variant string, load float64) (Result, bool) {
		for _, x := range wl.Runs {
			if x.Variant == variant && x.Load == load {
				return x, true
			}
		}
		return Result{}, false
	}
	say := func(format string, args ...any) {
		miss = append(miss, wl.Workload+": "+fmt.Sprintf(format, args...))
	}
	for _, load := range []float64{1.5, 3} {
		b, ok := at(variantBudget, load)
		if !ok {
			say("%gx targets: not measured (run the budget variant and the others at 0.8, 1.5 and 3)", load)
			continue
		}
		if b.GoodputOfCapacity < 0.97 {
			say("budget at %gx: goodput %.3f of the capacity, target >= 0.97", load, b.GoodputOfCapacity)
		}
		peers := 0
		for _, v := range Variants() {
			x, ok := at(v, load)
			if !ok || v == variantBudget {
				continue
			}
			peers++
			if b.GoodputRPS < x.GoodputRPS {
				say("budget at %gx: goodput %.1f/s, target >= %s's %.1f/s", load, b.GoodputRPS, v, x.GoodputRPS)
			}
			groups := make([]string, 0, len(x.ByBudget))
			for g := range x.ByBudget {
				groups = append(groups, g)
			}
			slices.Sort(groups)
			for _, g := range groups {
				if bg := b.ByBudget[g]; bg.InBudget < x.ByBudget[g].InBudget {
					say("budget at %gx: %.3f of the %s group in budget, target >= %s's %.3f", load, bg.InBudget, g, v, x.ByBudget[g].InBudget)
				}
			}
		}
		if peers == 0 {
			say("%gx goodput against the others: not measured", load)
		}
		if b.CriticalInBudget < 0.95 {
			say("budget at %gx: %.3f of critical requests in budget, target >= 0.95", load, b.CriticalInBudget)
		}
		if b.WastedCPUShare > 0.02 {
			say("budget at %gx: %.3f of the backend's work wasted, target <= 0.02", load, b.WastedCPUShare)
		}
	}
	b, okb := at(variantBudget, 0.8)
	n, okn := at(variantNone, 0.8)
	switch {
	case !okb || !okn:
		say("0.8x targets: not measured (run budget and none at 0.8)")
	default:
		if b.Refused() > 0.01 {
			say("budget at 0.8x: refused %.3f, target <= 0.01", b.Refused())
		}
		if b.P99Ms > n.P99Ms {
			say("budget at 0.8x: p99 %.1f ms, target <= none's %.1f ms", b.P99Ms, n.P99Ms)
		}
	}
	return miss
}
