package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/cmd/budget/internal/format"
)

// TermWidth is the width the terminal output fits in: every line writeTable
// prints is at most this many runes, so the output reads in an 100-column
// terminal without wrapping.
const TermWidth = 100

// WriteTable prints the measurements for a person to read at a glance: what
// budget is and what the patterns are (Intro), then per scenario a table of
// outcomes, costs and latency and one wrapped line per pattern saying which
// rung answered, what was refused and where requests failed; the overload
// case; one request's ledger; the verdict; and the notes. A cell with
// nothing to measure shows NoData, as the page does.
func WriteTable(w io.Writer, rep *Report) {
	fmt.Fprintln(w)
	writeWrapped(w, Intro+" More: "+ReadmeURL, "", "")
	for _, s := range rep.Scenarios {
		writeScenario(w, rep, s)
	}
	if o := rep.Overload; o != nil {
		writeOverload(w, o)
	}
	if len(rep.Ledgers) > 0 {
		l := rep.Ledgers[len(rep.Ledgers)-1]
		fmt.Fprintf(w, "\n")
		writeWrapped(w, fmt.Sprintf("where one request's budget went (%s, deadline + admission, request %d; %s):", l.Scenario, l.Request, l.Label), "", "  ")
		writeLedger(w, l)
	}
	if len(rep.Verdict) > 0 {
		fmt.Fprintln(w, "\nverdict, as measured in this run:")
		for _, v := range rep.Verdict {
			writeWrapped(w, v, "  ", "    ")
		}
	}
	fmt.Fprintln(w)
	for _, n := range rep.Notes {
		writeWrapped(w, n, "· ", "  ")
	}
	fmt.Fprintln(w)
}

// writeScenario prints one scenario: its configuration and faults, the
// table of figures, and a wrapped line per pattern.
func writeScenario(w io.Writer, rep *Report, s Scenario) {
	fmt.Fprintf(w, "\n%s: %s\n", s.Name, s.Title)
	fmt.Fprintf(w, "  budget %s · per-call timeout %s · %d requests, %d at a time\n",
		format.Duration(rep.Config.BudgetMs), format.Duration(s.PerCallTimeoutMs), rep.Config.Requests, rep.Config.Concurrency)
	for _, d := range s.Dependencies {
		if d.Fault != "none" {
			writeWrapped(w, fmt.Sprintf("fault %s=%s: %s", d.Name, d.Fault, d.FaultMeans), "  ", "    ")
		}
	}
	if s.Database != "" {
		writeWrapped(w, s.Database, "  ", "    ")
	}
	fmt.Fprintln(w)
	t := textTable{right: []bool{false, true, true, true, true, true, true, true, true}}
	t.add("pattern", "in budget", "late", "failed", "a failure took", "wasted work", "p50", "p99", "max")
	for _, p := range s.Patterns {
		t.add(p.Name, format.Pct(p.AnsweredRatio), format.Pct(p.LateRatio), format.Pct(p.FailedRatio), FailureCost(p), format.Ms(p.WastedWorkMs),
			format.Ms(p.LatencyMs.P50), format.Ms(p.LatencyMs.P99), format.Ms(p.LatencyMs.Max))
	}
	t.write(w)
	fmt.Fprintln(w)
	for _, p := range s.Patterns {
		var parts []string
		if len(p.Rungs) > 0 {
			parts = append(parts, "answered by "+format.Counts(p.Rungs))
		}
		if len(p.RefusalsByStage) > 0 {
			parts = append(parts, "refused before starting: "+format.Counts(p.RefusalsByStage))
		}
		if len(p.FailuresByStage) > 0 {
			parts = append(parts, "failed at "+FailedAt(p))
		}
		if len(parts) > 0 {
			writeWrapped(w, p.Name+": "+strings.Join(parts, "; "), "  ", "      ")
		}
	}
	writeDatabase(w, s)
}

// writeDatabase prints, when the database hop ran, how long PostgreSQL went
// on executing statements after their caller had left, per pattern.
func writeDatabase(w io.Writer, s Scenario) {
	t := textTable{right: []bool{false, true, true, true, true, true, true, true}}
	t.add("PostgreSQL", "statements", "caller left", "ran on", "p50", "p99", "max", "total")
	for _, p := range s.Patterns {
		if d := p.Database; d != nil {
			t.add(p.Name, strconv.Itoa(d.Statements), strconv.Itoa(d.CallerLeft), strconv.Itoa(d.RanOn),
				DatabaseCell(d, "p50"), DatabaseCell(d, "p99"), DatabaseCell(d, "max"), DatabaseCell(d, "total"))
		}
	}
	if len(t.rows) == 1 {
		return
	}
	fmt.Fprintln(w)
	t.write(w)
	fmt.Fprintln(w)
	writeWrapped(w, "ran on: statements the server went on executing after their caller had left; p50, p99, max "+
		"and total: how long it went on, over the statements whose caller left", "  ", "  ")
}

// writeOverload prints the overload case's table and what its columns mean.
func writeOverload(w io.Writer, o *Overload) {
	fmt.Fprintln(w)
	writeWrapped(w, fmt.Sprintf("overload: a dependency slows from %s to %s under a %d-worker service (%.0f requests/s, %.0f%% of them call it)",
		format.Duration(o.DependencyFromMs), format.Duration(o.DependencyToMs), o.Workers, o.RatePerSecond, 100*o.SlowShare), "", "  ")
	writeWrapped(w, fmt.Sprintf("full-size times at %.1f×: user's budget %s, caller's timeout %s, per-call timeout %s; measured while the dependency is slow",
		o.Scale, format.Duration(o.BudgetMs), format.Duration(o.UpstreamTimeoutMs), format.Duration(o.PerCallTimeoutMs)), "  ", "  ")
	fmt.Fprintln(w)
	t := textTable{right: []bool{false, true, true, true, true, true}}
	t.add("variant", "goodput", "their p99", "slow answered", "worker time late", "refused")
	for _, v := range o.Variants {
		t.add(v.Name, format.Pct(v.Goodput), format.Ms(v.OtherP99Ms), format.Pct(v.SlowAnsweredRatio),
			fmt.Sprintf("%.1fs", v.WorkerSecondsLate), strconv.FormatInt(v.RefusedBeforeStarting, 10))
	}
	t.write(w)
	fmt.Fprintln(w)
	writeWrapped(w, "goodput: the other requests, which never call the slow dependency, answered within the budget; "+
		"worker time late: worker time held after the user had left; refused: calls to the slow dependency refused before they started", "  ", "  ")
	fmt.Fprintf(w, "  goodput with budgets %s, without %s (the best variant without a budget)\n",
		format.Pct(o.Goodput.WithBudgets), format.Pct(o.Goodput.WithoutBudgets))
}

// writeLedger prints one request's ledger, one line per event, with a bar
// placing each timed event within the budget. It is narrower than the root
// package's Ledger.String so that it fits in termWidth.
func writeLedger(w io.Writer, l Ledger) {
	const barW = 16
	fmt.Fprintf(w, "  budget %s\n", format.Ms(format.Millis(l.Budget)))
	// The outcome column is as wide as its widest word, so every bar starts
	// in the same column.
	outW, stageW := 0, 0
	for _, ev := range l.Events {
		outW = max(outW, len(outcomeWord(ev.Outcome)))
		stageW = max(stageW, len(ev.Stage))
	}
	for _, ev := range l.Events {
		off := ev.At.Sub(l.Start)
		line := fmt.Sprintf("  %7s  %-8s %-*s %6s  left %6s  %-*s", "+"+format.Ms(format.Millis(off)), ev.Kind, stageW, ev.Stage,
			durOrBlank(ev.Duration), format.Ms(format.Millis(ev.Remaining)), outW, outcomeWord(ev.Outcome))
		if ev.Duration > 0 && l.Budget > 0 {
			from := min(int(float64(barW)*float64(off)/float64(l.Budget)), barW-1)
			n := max(1, min(int(float64(barW)*float64(ev.Duration)/float64(l.Budget)+0.5), barW-from))
			line += " |" + strings.Repeat(" ", from) + strings.Repeat("█", n) + strings.Repeat(" ", barW-from-n) + "|"
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

// durOrBlank formats a duration, or nothing for an instant event.
func durOrBlank(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return format.Ms(format.Millis(d))
}

// outcomeWord names an event's outcome, or nothing when it has none.
func outcomeWord(o budget.Outcome) string {
	if o == budget.OutcomeNone {
		return ""
	}
	return o.String()
}

// writeWrapped writes text wrapped at word boundaries to fit termWidth: the
// first line after first, the following ones after rest.
func writeWrapped(w io.Writer, text, first, rest string) {
	line, prefix := "", first
	for word := range strings.FieldsSeq(text) {
		if line != "" && utf8.RuneCountInString(prefix+line+" "+word) > TermWidth {
			fmt.Fprintln(w, prefix+line)
			line, prefix = "", rest
		}
		if line == "" {
			line = word
		} else {
			line += " " + word
		}
	}
	if line != "" {
		fmt.Fprintln(w, prefix+line)
	}
}

// NoData is what a cell shows when there is nothing to measure, such as
// what a failure took where nothing failed: the same mark in the terminal
// and on the page, never a zero that reads as a measurement.
const NoData = "—"

// FailureCost is the "a failure took" cell of p: the median time a failed
// request kept its user waiting, NoData when nothing failed, and "cut off"
// when the demo's own safety limit ended every failure.
func FailureCost(p Pattern) string {
	switch {
	case p.FailedRatio == 0:
		return NoData
	case failuresCutOffByDemo(p):
		return "cut off"
	}
	return format.Ms(p.FailureCostMs)
}

// DatabaseQuantities name the database table's figures measured over the
// statements whose caller left, in the table's order (see DatabaseCell).
var DatabaseQuantities = []string{"p50", "p99", "max", "total"}

// DatabaseCell formats one of DatabaseQuantities of d: how long the server
// went on executing statements after their caller left. It is NoData when
// no caller left: there is nothing to take a quantile of.
func DatabaseCell(d *Database, quantity string) string {
	if d.CallerLeft == 0 {
		return NoData
	}
	switch quantity {
	case "p50":
		return format.Ms(d.AfterCallerLeftMs.P50)
	case "p99":
		return format.Ms(d.AfterCallerLeftMs.P99)
	case "max":
		return format.Ms(d.AfterCallerLeftMs.Max)
	}
	return format.Ms(d.TotalAfterCallerLeftMs)
}

// FailedAt says where and why requests failed, such as "geometry: timeout 120".
func FailedAt(p Pattern) string {
	if len(p.FailuresByStage) == 0 {
		return NoData
	}
	stages := format.Counts(p.FailuresByStage)
	reasons := format.Counts(p.FailureReasons)
	return stages + " (" + reasons + ")"
}

// textTable lays out columns for a terminal, each right- or left-aligned,
// measuring width in runes so that "—" and "→" line up.
type textTable struct {
	right []bool
	rows  [][]string
}

// add appends a row; its cells line up with the header's.
func (t *textTable) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the rows, each column as wide as its widest cell.
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
