package overload_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/compare/internal/overload"
)

// TestRunAccountsForEveryRequest runs the harness small, every workload and
// every variant at a load under the capacity and one over it, and checks its
// structure only: every request sent is accounted for, the backend saw each
// request with the class the edge gave it (so classes crossed both hops)
// and requests of every class reached it, and the JSON has the issue's
// schema. It asserts nothing about timing, which a shared machine moves:
// each run sends a count of requests (measuredRequests after
// warmupRequests) at its load's rate, however long they take, so that
// what is sent, and which classes, does not depend on the machine's speed
// (a run for a duration once sent 6 requests at 0.8x on a busy machine).
func TestRunAccountsForEveryRequest(t *testing.T) {
	const measuredRequests, warmupRequests = 20, 5
	loads := []float64{0.8, 2}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	rep, err := overload.Run(ctx, overload.Config{
		Requests:         measuredRequests,
		WarmupRequests:   warmupRequests,
		CapacityDuration: 800 * time.Millisecond,
		Loads:            loads,
		Work:             4 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(rep.Workloads); got != len(overload.Workloads()) {
		t.Fatalf("%d workloads, want %d", got, len(overload.Workloads()))
	}
	seenAs := map[string]*[3]int{} // by variant: requests of each class the backend saw as that class
	for _, v := range overload.Variants() {
		seenAs[v] = new([3]int)
	}
	for i, wl := range rep.Workloads {
		if wl.Workload != overload.Workloads()[i] {
			t.Errorf("workload %d is %q, want %q", i, wl.Workload, overload.Workloads()[i])
		}
		t.Run(wl.Workload, func(t *testing.T) { checkWorkload(t, wl, loads, measuredRequests, seenAs) })
	}
	// Every variant let requests of every class through to the backend in
	// some workload at some load, and the backend saw them as the class the
	// edge gave them. (A variant may refuse a whole class over the capacity,
	// and a busy machine moves what "under" means: with 20 requests a run,
	// go-zero's shedder once refused every critical request of the mixed
	// workload at both loads.)
	for _, v := range overload.Variants() {
		for i, c := range []string{"critical", "default", "sheddable"} {
			if seenAs[v][i] == 0 {
				t.Errorf("%s: the backend saw no %s request as %s in any workload", v, c, c)
			}
		}
	}
	checkJSON(t, rep)
	var table, svg bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	for _, v := range overload.Variants() {
		if !strings.Contains(table.String(), "\n"+v+" ") || !strings.Contains(table.String(), "\n"+v+": ") {
			t.Errorf("the table has no row or no setting for %s:\n%s", v, table.String())
		}
	}
	if err := rep.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), "<svg") || !strings.Contains(svg.String(), "budget") {
		t.Errorf("the chart is not an SVG naming the variants: %.200s", svg.String())
	}
}

// checkWorkload checks one workload's runs, each of which was to send
// requests measured requests, and adds to seenAs, by variant, the requests
// of each class the backend saw as that class.
func checkWorkload(t *testing.T, rep overload.WorkloadReport, loads []float64, requests int, seenAs map[string]*[3]int) {
	if !(rep.CapacityRPS > 0) || !(rep.CapacityEndRPS > 0) {
		t.Fatalf("capacity %v at the start and %v at the end, want both positive", rep.CapacityRPS, rep.CapacityEndRPS)
	}
	if got, want := len(rep.Runs), len(loads)*len(overload.Variants()); got != want {
		t.Fatalf("%d runs, want %d (every variant at every load)", got, want)
	}
	// Every variant at a load is offered the same arrivals and classes.
	for i, r := range rep.Runs {
		first := rep.Runs[i-i%len(overload.Variants())]
		for _, c := range []string{"critical", "default", "sheddable"} {
			if r.Sent != first.Sent || r.ByClass[c][0] != first.ByClass[c][0] {
				t.Errorf("%s at %vx was offered %d requests (%d %s), %s %d (%d): want the same arrivals for every variant",
					r.Variant, r.Load, r.Sent, r.ByClass[c][0], c, first.Variant, first.Sent, first.ByClass[c][0])
			}
		}
	}
	for i, r := range rep.Runs {
		if want := overload.Variants()[i%len(overload.Variants())]; r.Variant != want || r.Load != loads[i/len(overload.Variants())] {
			t.Errorf("run %d is %s at %vx, want %s at %vx", i, r.Variant, r.Load, want, loads[i/len(overload.Variants())])
		}
		name := r.Variant + " at " + strings.TrimRight(strings.TrimRight(jsonNumber(r.Load), "0"), ".") + "x"
		if r.Sent != requests {
			t.Errorf("%s: sent %d requests, want the %d configured", name, r.Sent, requests)
		}
		sum := 0
		for _, n := range r.Outcomes {
			sum += n
		}
		if sum != r.Sent {
			t.Errorf("%s: outcomes %v add up to %d, want the %d sent", name, r.Outcomes, sum, r.Sent)
		}
		classes := 0
		for _, c := range []string{"critical", "default", "sheddable"} {
			n := r.ByClass[c]
			if n[0] == 0 || n[1] > n[0] {
				t.Errorf("%s: class %s sent %d, in budget %d", name, c, n[0], n[1])
			}
			classes += n[0]
		}
		if classes != r.Sent {
			t.Errorf("%s: classes add up to %d, want the %d sent", name, classes, r.Sent)
		}
		for i, c := range []string{"critical", "default", "sheddable"} {
			seenAs[r.Variant][i] += r.Classes[c][i]
		}
		if r.Mismatch != 0 {
			t.Errorf("%s: the backend saw %d of %d requests with another class than the edge gave them (edge class: backend saw critical, default, sheddable): %v",
				name, r.Mismatch, r.Seen, r.Classes)
		}
		if r.Started > r.Seen || r.Seen > r.Sent {
			t.Errorf("%s: started %d, seen %d, sent %d: want started <= seen <= sent", name, r.Started, r.Seen, r.Sent)
		}
		for _, f := range []float64{r.GoodputOfCapacity / max(r.Load, 1) / 2, r.AdmittedMissedDeadline, r.CriticalInBudget, r.DefaultInBudget, r.SheddableInBudget, r.Refused()} {
			if f < 0 || f > 1 {
				t.Errorf("%s: a share is %v, outside [0, 1]: %+v", name, f, r)
			}
		}
		if r.P99Ms < 0 || r.P99Ms > 3000 || r.CPUOnFailedS < 0 {
			t.Errorf("%s: p99 %v ms (want within the longest budget), CPU on failed %v s", name, r.P99Ms, r.CPUOnFailedS)
		}
	}

	// Every budget group of the workload has requests, for every variant.
	for _, r := range rep.Runs {
		sum := 0
		for g, n := range r.ByBudget {
			if n.Sent == 0 || n.InBudget < 0 || n.InBudget > 1 {
				t.Errorf("%s at %vx: budget group %s: %+v", r.Variant, r.Load, g, n)
			}
			// Its p99 is of answers within the group's budget.
			if b, err := time.ParseDuration(g); err != nil || n.P99Ms < 0 || n.P99Ms > float64(b)/float64(time.Millisecond) || (n.InBudget > 0) != (n.P99Ms > 0) {
				t.Errorf("%s at %vx: budget group %s: p99 %v ms, want within the group's budget (and 0 only with none in budget)", r.Variant, r.Load, g, n.P99Ms)
			}
			sum += n.Sent
		}
		if sum != r.Sent || r.WastedCPUShare < 0 || r.WastedCPUShare > 1 {
			t.Errorf("%s at %vx: budget groups add up to %d of %d sent; wasted %v", r.Variant, r.Load, sum, r.Sent, r.WastedCPUShare)
		}
		if rep.Workload == overload.WorkloadMixed && len(r.ByBudget) != 3 {
			t.Errorf("%s at %vx: budget groups %v, want the mixed workload's three", r.Variant, r.Load, r.ByBudget)
		}
	}
}

// checkJSON checks that the JSON form has exactly the fields.
func checkJSON(t *testing.T, rep *overload.Report) {
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if got := keys(doc); !slices.Equal(got, []string{"workloads"}) {
		t.Errorf("report fields %v, want workloads", got)
	}
	wls, _ := doc["workloads"].([]any)
	if len(wls) != len(rep.Workloads) {
		t.Fatalf("JSON has %d workloads, want %d", len(wls), len(rep.Workloads))
	}
	want := []string{"admitted_missed_deadline", "by_budget", "by_class", "cpu_on_failed_s", "critical_in_budget", "default_in_budget",
		"goodput_of_capacity", "goodput_rps", "load", "p99_ms", "sheddable_in_budget", "variant", "wasted_cpu_share", "workload"}
	for i, w := range wls {
		wm, _ := w.(map[string]any)
		if got := keys(wm); !slices.Equal(got, []string{"budgets", "capacity_rps", "costs", "fanout", "runs", "workload"}) {
			t.Errorf("workload fields %v", got)
		}
		runs, _ := wm["runs"].([]any)
		if len(runs) != len(rep.Workloads[i].Runs) {
			t.Fatalf("JSON has %d runs, want %d", len(runs), len(rep.Workloads[i].Runs))
		}
		for _, r := range runs {
			m, _ := r.(map[string]any)
			if got := keys(m); !slices.Equal(got, want) {
				t.Errorf("run fields %v, want %v", got, want)
			}
		}
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  overload.Config
		want string
	}{
		{overload.Config{Loads: []float64{0}}, "load"},
		{overload.Config{Variants: []string{"nginx"}}, `unknown variant "nginx"`},
		{overload.Config{Mix: overload.Mix{Critical: -1}}, "Mix"},
		{overload.Config{Work: -time.Millisecond}, "negative"},
		{overload.Config{Requests: 10, WarmupRequests: -1}, "negative"},
		{overload.Config{Workloads: []string{"bursty"}}, `unknown workload "bursty"`},
		{overload.Config{Costs: []overload.Weighted{{Value: time.Millisecond, Share: -1}}}, "Costs"},
	} {
		_, err := overload.Run(context.Background(), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Run(%+v) = %v, want an error saying %q", c.cfg, err, c.want)
		}
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func jsonNumber(f float64) string {
	b, _ := json.Marshal(f)
	return string(b) + ".0"
}
