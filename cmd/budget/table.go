package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// writeTable prints the measurements for a person to read at a glance.
func writeTable(w io.Writer, rep *report) {
	for _, s := range rep.Scenarios {
		fmt.Fprintf(w, "\n%s: %s\n", s.Name, s.Title)
		fmt.Fprintf(w, "  budget %s · per-call timeout %s · faults: %s · %d requests, %d at a time\n\n",
			msDur(rep.Config.BudgetMs), msDur(s.PerCallTimeoutMs), scenarioFaults(s), rep.Config.Requests, rep.Config.Concurrency)
		t := textTable{right: []bool{false, true, true, true, true, true, true, true, false, false, false}}
		t.add("pattern", "p50", "p99", "max", "in budget", "late", "failed", "wasted work", "answered by", "refused before starting", "failed at")
		for _, p := range s.Patterns {
			t.add(p.Name, fmtMs(p.LatencyMs.P50), fmtMs(p.LatencyMs.P99), fmtMs(p.LatencyMs.Max),
				pct(p.AnsweredRatio), pct(p.LateRatio), pct(p.FailedRatio), fmtMs(p.WastedWorkMs),
				counts(p.Rungs), counts(p.RefusalsByStage), failedAt(p))
		}
		t.write(w)
	}
	if o := rep.Overload; o != nil {
		fmt.Fprintf(w, "\noverload: a dependency slows from %s to %s under a %d-worker service (%.0f requests/s, %.0f%% of them call it)\n",
			msDur(o.DependencyFromMs), msDur(o.DependencyToMs), o.Workers, o.RatePerSecond, 100*o.SlowShare)
		fmt.Fprintf(w, "  full-size times at %.1f×: user's budget %s, caller's timeout %s, per-call timeout %s; measured while the dependency is slow\n\n",
			o.Scale, msDur(o.BudgetMs), msDur(o.UpstreamTimeoutMs), msDur(o.PerCallTimeoutMs))
		t := textTable{right: []bool{false, true, true, true, true, true}}
		t.add("variant", "goodput of other requests", "their p99", "slow ones answered", "worker time after the user left", "refused before starting")
		for _, v := range o.Variants {
			t.add(v.Name, pct(v.Goodput), fmtMs(v.OtherP99Ms), pct(v.SlowAnsweredRatio),
				fmt.Sprintf("%.1fs", v.WorkerSecondsLate), strconv.FormatInt(v.RefusedBeforeStarting, 10))
		}
		t.write(w)
		fmt.Fprintf(w, "\n  goodput with budgets %s, without %s (the best variant without a budget)\n",
			pct(o.Goodput.WithBudgets), pct(o.Goodput.WithoutBudgets))
	}
	if len(rep.Ledgers) > 0 {
		l := rep.Ledgers[len(rep.Ledgers)-1]
		fmt.Fprintf(w, "\nwhere one request's budget went (%s, deadline + admission, request %d; %s):\n", l.Scenario, l.Request, l.Label)
		for line := range strings.Lines(l.Text) {
			fmt.Fprint(w, "  "+line)
		}
	}
	fmt.Fprintln(w)
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "· %s\n", n)
	}
	fmt.Fprintln(w)
}

func scenarioFaults(s scenarioReport) string {
	var parts []string
	for _, d := range s.Dependencies {
		if d.Fault != "none" {
			parts = append(parts, d.Name+"="+d.Fault)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

func fmtMs(v float64) string {
	switch {
	case v >= 10_000:
		return fmt.Sprintf("%.0fs", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.2fs", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0fms", v)
	}
	return fmt.Sprintf("%.1fms", v)
}

func pct(r float64) string { return fmt.Sprintf("%.0f%%", 100*r) }

// counts renders a map of counts, largest first, such as "cache 97, exact 23".
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "—"
	}
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// failedAt says where and why requests failed, such as "geometry: timeout 120".
func failedAt(p patternReport) string {
	if len(p.FailuresByStage) == 0 {
		return "—"
	}
	stages := counts(p.FailuresByStage)
	reasons := counts(p.FailureReasons)
	return stages + " (" + reasons + ")"
}

// textTable lays out columns for a terminal, each right- or left-aligned,
// measuring width in runes so that "—" and "→" line up.
type textTable struct {
	right []bool
	rows  [][]string
}

func (t *textTable) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *textTable) write(w io.Writer) {
	widths := make([]int, len(t.right))
	for _, r := range t.rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range t.rows {
		var b strings.Builder
		b.WriteString(" ")
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			b.WriteString(" ")
			if i > 0 {
				b.WriteString(" ")
			}
			if t.right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
