package overload

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Report is what a run measured. Its JSON form is
// {"workloads": [{"workload": ..., "capacity_rps": N, "runs": [...]}]}.
type Report struct {
	// Workloads has one entry per workload, in the order run.
	Workloads []WorkloadReport `json:"workloads"`

	// Cgroups says where the CPU-reading shedders read their CPU use: their
	// own process's CPU accounting group, or the machine's.
	Cgroups string `json:"-"`

	// Settings says how each variant was configured, by name.
	Settings map[string]string `json:"-"`
	// Work is the CPU time of one request's work in the uniform and fan-out
	// workloads; Procs the backend's GOMAXPROCS; Budget their requests'
	// budget.
	Work   time.Duration `json:"-"`
	Procs  int           `json:"-"`
	Budget time.Duration `json:"-"`
	// Duration and Warmup are each run's measured and warm-up time, unless
	// Requests, each run's measured requests, is positive; WarmupRequests
	// are then the requests sent before them.
	Duration, Warmup         time.Duration `json:"-"`
	Requests, WarmupRequests int           `json:"-"`
}

// WorkloadReport is what a run measured on one workload.
type WorkloadReport struct {
	Workload string `json:"workload"`
	// Budgets and Costs are the mixes each request's budget and backend
	// work were drawn from (value:share); Fanout the backend calls the
	// edge needs for one request.
	Budgets string `json:"budgets"`
	Costs   string `json:"costs"`
	Fanout  int    `json:"fanout"`
	// CapacityRPS is the capacity measured at the start of the workload, in
	// answers a second.
	CapacityRPS float64 `json:"capacity_rps"`
	// Runs has one entry per variant and load, loads in the order run.
	Runs []Result `json:"runs"`

	// CapacityEndRPS is the capacity measured again at the end of the
	// workload (zero when the capacity was given): how far the machine
	// drifted.
	CapacityEndRPS float64 `json:"-"`
	// CapacityCPU is the backend's CPU use, in CPUs, while the capacity was
	// measured (at the start, and at the end when measured again). On a
	// quiet machine it is the backend's GOMAXPROCS; less means other work
	// took the CPU.
	CapacityCPU []float64 `json:"-"`
}

// Group is what a group of requests (a budget, a class) got.
type Group struct {
	Sent     int     `json:"sent"`
	InBudget float64 `json:"in_budget"` // the share answered within their budget
	// P99Ms is the 99th percentile latency of the group's answers within
	// their budget.
	P99Ms float64 `json:"p99_ms"`
}

// Result is what one variant did at one load.
type Result struct {
	Variant  string  `json:"variant"`
	Workload string  `json:"workload"`
	Load     float64 `json:"load"` // offered load, a multiple of the capacity
	// GoodputRPS is the answers within their budget a second.
	GoodputRPS float64 `json:"goodput_rps"`
	// GoodputOfCapacity is GoodputRPS over the run's capacity.
	GoodputOfCapacity float64 `json:"goodput_of_capacity"`
	// P99Ms is the 99th percentile latency of the answers within budget.
	P99Ms float64 `json:"p99_ms"`
	// AdmittedMissedDeadline is the share of the requests whose work the
	// backend started that were not answered within their budget.
	AdmittedMissedDeadline float64 `json:"admitted_missed_deadline"`
	// CriticalInBudget, DefaultInBudget and SheddableInBudget are the share
	// of each class's requests answered within budget.
	CriticalInBudget  float64 `json:"critical_in_budget"`
	DefaultInBudget   float64 `json:"default_in_budget"`
	SheddableInBudget float64 `json:"sheddable_in_budget"`
	// ByBudget and ByClass are, for each budget group (named by the
	// budget, "300ms") and each class, the requests sent, the share answered
	// within their budget and the p99 latency of those answers.
	ByBudget map[string]Group `json:"by_budget"`
	ByClassG map[string]Group `json:"by_class"`
	// WastedCPUShare is the backend work (units run) spent on requests not
	// answered in their budget over all the backend work on the requests
	// sent in the measured interval.
	WastedCPUShare float64 `json:"wasted_cpu_share"`
	// CPUOnFailedS is the backend CPU time, in seconds, spent on the work of
	// requests not answered within budget: the backend process's CPU time
	// over the run apportioned by units of work.
	CPUOnFailedS float64 `json:"cpu_on_failed_s"`

	// Sent counts the requests sent in the measured interval; Outcomes how
	// they ended: in budget, refused (an error answer in budget), timed out,
	// failed otherwise.
	Sent     int               `json:"-"`
	Outcomes [numOutcomes]int  `json:"-"`
	ByClass  map[string][2]int `json:"-"` // class: {sent, in budget}
	Started  int               `json:"-"` // requests whose work the backend started
	Seen     int               `json:"-"` // requests the backend saw
	Mismatch int               `json:"-"` // requests the backend saw with another class than the edge gave
	Classes  map[string][3]int `json:"-"` // class the edge gave: backend saw it as {critical, default, sheddable}
	// BackendCPU is the backend's CPU use over the run, warm-up included, in
	// CPUs.
	BackendCPU float64 `json:"-"`
}

// Refused is the share of requests answered with a refusal.
func (r Result) Refused() float64 { return share(r.Outcomes[refused], r.Sent) }

// summarize computes a variant's result at a load from what the load
// generator and the backend recorded.
//
// The CPU spent on failed requests is the backend's CPU time over the run
// (cpu seconds, warm-up included) apportioned by units of work: failed
// requests' units over all units run. That counts the backend's own
// overhead (HTTP, queueing) in proportion to work, and it never exceeds
// what the process used.
func summarize(name string, load, capacity float64, measure time.Duration, sends []sent, recs []record, cpu float64) Result {
	byID := make(map[int64][]record, len(recs))
	var allUnits int64
	for _, r := range recs {
		byID[r.ID] = append(byID[r.ID], r)
		allUnits += r.Units
	}
	res := Result{Variant: name, Load: load, ByClass: map[string][2]int{}, Classes: map[string][3]int{},
		ByBudget: map[string]Group{}, ByClassG: map[string]Group{}}
	byBudget := map[string][2]int{}
	var lat []time.Duration
	latOf := map[string][]time.Duration{} // by budget group and by class
	var failedUnits, measuredUnits int64
	missed := 0
	for _, s := range sends {
		if !s.measured {
			continue
		}
		res.Sent++
		res.Outcomes[s.outcome]++
		c, b := res.ByClass[s.class], byBudget[s.budget.String()]
		c[0]++
		b[0]++
		ok := s.outcome == inBudget
		if ok {
			c[1]++
			b[1]++
			lat = append(lat, s.latency)
			latOf["budget "+s.budget.String()] = append(latOf["budget "+s.budget.String()], s.latency)
			latOf["class "+s.class] = append(latOf["class "+s.class], s.latency)
		}
		res.ByClass[s.class], byBudget[s.budget.String()] = c, b
		parts := byID[s.id]
		if len(parts) == 0 {
			continue
		}
		res.Seen++
		started := false
		for _, rec := range parts {
			if rec.Class != s.class {
				res.Mismatch++
			}
			cl := res.Classes[s.class]
			switch rec.Class {
			case classCritical:
				cl[0]++
			case classDefault:
				cl[1]++
			case classSheddable:
				cl[2]++
			}
			res.Classes[s.class] = cl
			started = started || rec.Started
			measuredUnits += rec.Units
			if !ok {
				failedUnits += rec.Units
			}
		}
		if started {
			res.Started++
			if !ok {
				missed++
			}
		}
	}
	res.GoodputRPS = float64(res.Outcomes[inBudget]) / measure.Seconds()
	if capacity > 0 {
		res.GoodputOfCapacity = res.GoodputRPS / capacity
	}
	res.P99Ms = ms(quantile(lat, 0.99))
	res.AdmittedMissedDeadline = share(missed, res.Started)
	res.CriticalInBudget = share(res.ByClass[classCritical][1], res.ByClass[classCritical][0])
	res.DefaultInBudget = share(res.ByClass[classDefault][1], res.ByClass[classDefault][0])
	res.SheddableInBudget = share(res.ByClass[classSheddable][1], res.ByClass[classSheddable][0])
	for k, n := range res.ByClass {
		res.ByClassG[k] = Group{Sent: n[0], InBudget: share(n[1], n[0]), P99Ms: ms(quantile(latOf["class "+k], 0.99))}
	}
	for k, n := range byBudget {
		res.ByBudget[k] = Group{Sent: n[0], InBudget: share(n[1], n[0]), P99Ms: ms(quantile(latOf["budget "+k], 0.99))}
	}
	if allUnits > 0 {
		res.CPUOnFailedS = cpu * float64(failedUnits) / float64(allUnits)
	}
	if measuredUnits > 0 {
		res.WastedCPUShare = float64(failedUnits) / float64(measuredUnits)
	}
	return res
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func share(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// quantile returns the q quantile of d (nearest rank), zero when d is empty.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(math.Ceil(q*float64(len(d)))) - 1
	return d[min(max(i, 0), len(d)-1)]
}

// WriteTable writes the report as text tables, one per workload, with the
// settings of each variant below them.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	if r.Requests > 0 {
		fmt.Fprintf(&b, "backend GOMAXPROCS=%d; each run %d requests after %d of warm-up\n", r.Procs, r.Requests, r.WarmupRequests)
	} else {
		fmt.Fprintf(&b, "backend GOMAXPROCS=%d; each run %v after %v of warm-up\n", r.Procs, r.Duration, r.Warmup)
	}
	if r.Cgroups != "" {
		fmt.Fprintf(&b, "CPU accounting: %s\n", r.Cgroups)
	}
	for _, wl := range r.Workloads {
		wl.writeTable(&b, r.Procs)
	}
	b.WriteString("\ngoodput: answers in budget a second; of cap: over the workload's capacity; adm miss: share of the requests the backend started not answered in budget;\ncritical/default/shed: share of each class in budget; waste: share of the backend's work spent on requests not answered in budget; refused: share answered with an error in budget;\nbe cpu: the backend's CPU use over the run (warm-up included), in CPUs: below its GOMAXPROCS at a load over 1x means other work on the machine took the CPU;\nin budget by budget group: the share of each group's requests answered in their budget\n\n")
	var all []Result
	for _, wl := range r.Workloads {
		all = append(all, wl.Runs...)
	}
	for _, x := range uniqueVariants(all) {
		fmt.Fprintf(&b, "%s: %s\n", x, r.Settings[x])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (wl WorkloadReport) writeTable(b *strings.Builder, procs int) {
	fmt.Fprintf(b, "\n== workload %s: budgets %s, work %s, %d backend call(s) a request; capacity %.0f requests/s (closed loop through the unprotected graph; %.0f measured again at the end; the backend used %.2f CPUs meanwhile)\n",
		wl.Workload, wl.Budgets, wl.Costs, wl.Fanout, wl.CapacityRPS, wl.CapacityEndRPS, wl.CapacityCPU)
	if len(wl.CapacityCPU) > 0 && slices.Min(wl.CapacityCPU) < 0.8*float64(procs) {
		fmt.Fprintf(b, "warning: the backend used %.2f of its %d CPUs while the capacity was measured: other work shares this machine, so loads are not the multiples of capacity they say; compare variants within this run, beside their backend CPU\n",
			slices.Min(wl.CapacityCPU), procs)
	}
	var groups []string
	for _, x := range wl.Runs {
		for g := range x.ByBudget {
			if !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
	}
	slices.SortFunc(groups, func(a, c string) int {
		da, _ := time.ParseDuration(a)
		dc, _ := time.ParseDuration(c)
		return int(da - dc)
	})
	fmt.Fprintf(b, "%-17s %5s %8s %7s %7s %8s %8s %8s %8s %7s %8s %6s %6s", "variant", "load", "goodput", "of cap", "p99 ms", "adm miss", "critical", "default", "shed", "waste", "refused", "sent", "be cpu")
	if len(groups) > 1 {
		for _, g := range groups {
			fmt.Fprintf(b, " %7s", g)
		}
	}
	b.WriteString("\n")
	for _, x := range wl.Runs {
		fmt.Fprintf(b, "%-17s %4.1fx %8.1f %7.3f %7.1f %8.3f %8.3f %8.3f %8.3f %7.3f %8.3f %6d %6.2f",
			x.Variant, x.Load, x.GoodputRPS, x.GoodputOfCapacity, x.P99Ms, x.AdmittedMissedDeadline,
			x.CriticalInBudget, x.DefaultInBudget, x.SheddableInBudget, x.WastedCPUShare, x.Refused(), x.Sent, x.BackendCPU)
		if len(groups) > 1 {
			for _, g := range groups {
				fmt.Fprintf(b, " %7.3f", x.ByBudget[g].InBudget)
			}
		}
		b.WriteString("\n")
	}
}

func uniqueVariants(runs []Result) []string {
	var out []string
	for _, x := range runs {
		if !slices.Contains(out, x.Variant) {
			out = append(out, x.Variant)
		}
	}
	return out
}
