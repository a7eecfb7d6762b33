package overload

import "fmt"

// Misses returns, one line each, the targets that the budget
// variant missed in r, judged exactly (no margin): at 3× the capacity,
// goodput at least 0.95 of the capacity and 1.1 times the best other
// variant's, at most 1 % of admitted requests late, and at least 95 % of
// critical requests in budget; at 1.5×, at least 99 % of critical requests;
// at 0.8×, no variant refusing anything and budget's p99 within 5 % of no
// protection's. A target whose runs are not in r (a run with other -loads or
// -variants) is reported as not measured. An empty result means every
// target was met.
func (r *Report) Misses() []string {
	var miss []string
	at := func(variant string, load float64) (Result, bool) {
		for _, x := range r.Runs {
			if x.Variant == variant && x.Load == load {
				return x, true
			}
		}
		return Result{}, false
	}
	missing := func(what string) {
		miss = append(miss, what+": not measured (run the budget variant and the others at 0.8, 1.5 and 3)")
	}
	if b3, ok := at("budget", 3); !ok {
		missing("3x targets")
	} else {
		if b3.GoodputOfCapacity < 0.95 {
			miss = append(miss, fmt.Sprintf("budget at 3x: goodput %.3f of the capacity, target >= 0.95", b3.GoodputOfCapacity))
		}
		best, name := 0.0, ""
		for _, v := range Variants() {
			if x, ok := at(v, 3); ok && v != "budget" && x.GoodputRPS > best {
				best, name = x.GoodputRPS, v
			}
		}
		if name == "" {
			missing("3x goodput against the others")
		} else if b3.GoodputRPS < 1.1*best {
			miss = append(miss, fmt.Sprintf("budget at 3x: goodput %.1f/s, target >= 1.1 × %s's %.1f/s", b3.GoodputRPS, name, best))
		}
		if b3.AdmittedMissedDeadline > 0.01 {
			miss = append(miss, fmt.Sprintf("budget at 3x: %.3f of admitted requests missed their deadline, target <= 0.01", b3.AdmittedMissedDeadline))
		}
		if b3.CriticalInBudget < 0.95 {
			miss = append(miss, fmt.Sprintf("budget at 3x: %.3f of critical requests in budget, target >= 0.95", b3.CriticalInBudget))
		}
	}
	if b, ok := at("budget", 1.5); !ok {
		missing("1.5x target")
	} else if b.CriticalInBudget < 0.99 {
		miss = append(miss, fmt.Sprintf("budget at 1.5x: %.3f of critical requests in budget, target >= 0.99", b.CriticalInBudget))
	}
	for _, v := range Variants() {
		if x, ok := at(v, 0.8); ok && x.Refused() > 0 {
			miss = append(miss, fmt.Sprintf("%s at 0.8x: refused %.3f, target: nothing", v, x.Refused()))
		}
	}
	b, okb := at("budget", 0.8)
	n, okn := at("none", 0.8)
	if !okb || !okn {
		missing("0.8x p99 against no protection")
	} else if b.P99Ms > 1.05*n.P99Ms {
		miss = append(miss, fmt.Sprintf("budget at 0.8x: p99 %.1f ms, target <= 1.05 × none's %.1f ms", b.P99Ms, n.P99Ms))
	}
	return miss
}
