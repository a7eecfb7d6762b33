package report

import (
	"fmt"
	"image/color"
	"strings"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/cmd/budget/internal/chart"
	"github.com/timebudget/budget/cmd/budget/internal/format"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The charts are drawn in the style of package chart, shared with budget
// sim's report: SVG, the Okabe–Ito palette, one colour per outcome and per
// series, shares up to 100 %, log scales where figures differ by orders of
// magnitude.

// drawn is a rendered chart (an SVG document) with the text an <img> needs.
// Key names the chart on the page (data-chart), so tests and readers can
// find it.
type drawn struct {
	Key   string
	Title string
	Alt   string
	SVG   []byte
}

// Charts come in two widths: half of the page's column, two side by side,
// and the whole column.
const (
	halfW  = 5.4 * vg.Inch
	fullW  = 10.8 * vg.Inch
	chartH = 3.4 * vg.Inch
)

// patternLabel is a pattern's name on a chart's axis, broken over two lines
// so four patterns fit under a half-width chart.
func patternLabel(p Pattern) string { return twoLines(p.Name) }

// twoLines breaks a category name after its first word (or after " + "), so
// that four or five categories fit under a half-width chart.
func twoLines(name string) string {
	name = strings.Replace(name, " + ", " +\n", 1)
	if !strings.Contains(name, "\n") {
		name = strings.Replace(name, " ", "\n", 1)
	}
	return name
}

// cutOffByDemo reports whether every request of the pattern was ended by the
// load generator's own safety limit: its latencies are then the demo's
// cut-off, not a measurement.
func cutOffByDemo(p Pattern) bool { return p.Requests > 0 && p.CutOff == p.Requests }

// failuresCutOffByDemo reports whether every failed request of the pattern
// was ended by the load generator's safety limit: what its failures "cost"
// is then the demo's cut-off, not a measurement.
func failuresCutOffByDemo(p Pattern) bool {
	if p.FailedRatio == 0 || p.CutOff == 0 {
		return false
	}
	total := 0
	for _, n := range p.FailureReasons {
		total += n
	}
	return p.CutOff == total
}

// outcomeChart stacks, for each pattern, the share of requests answered in
// budget, answered late and failed: the first thing to look at, because a
// pattern whose latency sits on the budget line may still fail every request.
func outcomeChart(s Scenario) (drawn, error) {
	n := len(s.Patterns)
	names := make([]string, n)
	in, late, failed := make(plotter.Values, n), make(plotter.Values, n), make(plotter.Values, n)
	for i, pr := range s.Patterns {
		names[i] = patternLabel(pr)
		in[i], late[i], failed[i] = 100*pr.AnsweredRatio, 100*pr.LateRatio, 100*pr.FailedRatio
	}
	p := chart.NewBarPlot(s.Name+": how each request ended", "share of requests (%)", names)
	chart.ShareAxis(p) // the page's key names the colours, so no legend covers the bars
	w := vg.Points(46)
	var below *plotter.BarChart
	var xys plotter.XYs
	var texts []string
	for _, part := range []struct {
		vals plotter.Values
		c    color.Color
	}{{in, chart.InBudget}, {late, chart.Late}, {failed, chart.Failed}} { // answered in budget, late, failed
		b, err := chart.Bars(part.vals, w, part.c)
		if err != nil {
			return drawn{}, err
		}
		if below != nil {
			b.StackOn(below)
		}
		for i, v := range part.vals {
			if v >= 7 { // a label fits inside the segment
				base := 0.0
				if below != nil {
					base = below.BarHeight(i)
				}
				xys = append(xys, plotter.XY{X: float64(i), Y: base + v/2 - 3})
				texts = append(texts, fmt.Sprintf("%.0f%%", v))
			}
		}
		p.Add(b)
		below = b
	}
	labels, err := chart.ValueLabels(xys, texts, 0)
	if err != nil {
		return drawn{}, err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].Color = color.White
	}
	p.Add(labels)
	chart.FitX(p, n)
	svg, err := chart.SVG(p, halfW, chartH)
	return drawn{
		Key: "outcomes-" + s.Name, Title: p.Title.Text, SVG: svg,
		Alt: fmt.Sprintf("stacked bars of the share of %s's requests answered in budget, answered late and failed, for each pattern", s.Name),
	}, err
}

// failureCostChart shows how long a failed request took to fail, per
// pattern: what a failure costs the user who waits for it.
func failureCostChart(s Scenario, budgetMs, safetyMs float64) (drawn, error) {
	n := len(s.Patterns)
	names := make([]string, n)
	vals, grey := make(plotter.Values, n), make(plotter.Values, n)
	var xys plotter.XYs
	var texts []string
	top := max(budgetMs, safetyMs)
	for i, pr := range s.Patterns {
		names[i] = patternLabel(pr)
		text := format.Ms(pr.FailureCostMs)
		switch {
		case pr.FailedRatio == 0:
			text = "none failed"
		case failuresCutOffByDemo(pr):
			grey[i] = pr.FailureCostMs
			text = "demo's cut-off"
		default:
			vals[i] = pr.FailureCostMs
		}
		xys = append(xys, plotter.XY{X: float64(i), Y: pr.FailureCostMs})
		texts = append(texts, text)
	}
	p := chart.NewBarPlot(s.Name+": time a failed request took to fail (median)", "milliseconds", names)
	p.Y.Min, p.Y.Max = 0, top*1.6 // room for the legend above the bars
	w := vg.Points(46)
	measured, err := chart.Bars(vals, w, chart.Failed)
	if err != nil {
		return drawn{}, err
	}
	cut, err := chart.Bars(grey, w, chart.Grey)
	if err != nil {
		return drawn{}, err
	}
	line, err := chart.BudgetLine(budgetMs, n)
	if err != nil {
		return drawn{}, err
	}
	labels, err := chart.ValueLabels(xys, texts, 0)
	if err != nil {
		return drawn{}, err
	}
	p.Add(measured, cut, line, labels)
	p.Legend.Add("measured", measured)
	p.Legend.Add("cut off by the demo, not measured", cut)
	p.Legend.Add("budget "+format.Duration(budgetMs).String(), line)
	p.Legend.Top = true
	p.Legend.Left = true
	chart.FitX(p, n)
	svg, err := chart.SVG(p, halfW, chartH)
	return drawn{
		Key: "failure-cost-" + s.Name, Title: p.Title.Text, SVG: svg,
		Alt: fmt.Sprintf("bars of the median time a failed request of %s took to fail, for each pattern, with the %s budget as a dashed line", s.Name, format.Duration(budgetMs)),
	}, err
}

// logBarChart draws one bar per category on a logarithmic axis of
// milliseconds (chart.LogBars), each labelled with its value.
func logBarChart(key, title, yLabel, alt string, names []string, valsMs []float64, c color.Color, w vg.Length) (drawn, error) {
	p, err := chart.LogBars(title, yLabel, names, valsMs, c, format.Ms)
	if err != nil {
		return drawn{}, err
	}
	svg, err := chart.SVG(p, w, chartH)
	return drawn{Key: key, Title: title, Alt: alt, SVG: svg}, err
}

// wastedChart shows, on a log scale, how long the dependencies kept working
// after their caller had gone: the figures differ by five orders of
// magnitude, which a linear axis would flatten to one visible bar.
func wastedChart(s Scenario) (drawn, error) {
	names := make([]string, len(s.Patterns))
	vals := make([]float64, len(s.Patterns))
	for i, pr := range s.Patterns {
		names[i] = patternLabel(pr)
		vals[i] = pr.WastedWorkMs
	}
	return logBarChart("wasted-"+s.Name, s.Name+": work done after the caller had gone (log scale)",
		"dependency time, summed", fmt.Sprintf("bars on a log scale of the work %s's dependencies did after their caller had gone, for each pattern", s.Name),
		names, vals, chart.Purple, halfW)
}

// latencyChart shows p50, p99 and max time to answer or fail for each pattern
// of a scenario, with the budget as a dashed line. A pattern whose every
// request was cut off by the load generator is drawn as one grey bar at the
// cut-off and labelled as such: those times are the demo's, not measured.
func latencyChart(s Scenario, budgetMs float64) (drawn, error) {
	n := len(s.Patterns)
	names := make([]string, n)
	p := chart.NewBarPlot(s.Name+": time to answer or fail", "milliseconds", names)
	series := []struct {
		label string
		get   func(Latency) float64
		c     color.Color
	}{
		{"p50", func(l Latency) float64 { return l.P50 }, chart.Series(0)},
		{"p99", func(l Latency) float64 { return l.P99 }, chart.Series(1)},
		{"max", func(l Latency) float64 { return l.Max }, chart.Series(2)},
	}
	w := vg.Points(20)
	top := budgetMs
	grey := make(plotter.Values, n)
	var cutXYs plotter.XYs
	var cutTexts []string
	for i, sr := range series {
		vals := make(plotter.Values, n)
		for j, pr := range s.Patterns {
			names[j] = patternLabel(pr)
			top = max(top, sr.get(pr.LatencyMs))
			if cutOffByDemo(pr) {
				grey[j] = pr.LatencyMs.Max
				continue
			}
			vals[j] = sr.get(pr.LatencyMs)
		}
		b, err := chart.Bars(vals, w, sr.c)
		if err != nil {
			return drawn{}, err
		}
		b.Offset = vg.Length(i-1) * w
		p.Add(b)
		p.Legend.Add(sr.label, b)
	}
	for j, pr := range s.Patterns {
		switch {
		case cutOffByDemo(pr):
			cutXYs = append(cutXYs, plotter.XY{X: float64(j), Y: pr.LatencyMs.Max})
			cutTexts = append(cutTexts, "demo's cut-off,\nnot measured")
		case pr.CutOff > 0:
			// Some requests ended at the cut-off: their times are the demo's.
			cutXYs = append(cutXYs, plotter.XY{X: float64(j), Y: pr.LatencyMs.Max})
			cutTexts = append(cutTexts, fmt.Sprintf("%d of %d cut off\nby the demo", pr.CutOff, pr.Requests))
		}
	}
	cut, err := chart.Bars(grey, 3*w, chart.Grey)
	if err != nil {
		return drawn{}, err
	}
	p.Add(cut)
	p.Legend.Add("cut off by the demo", cut)
	if len(cutXYs) > 0 {
		labels, err := chart.ValueLabels(cutXYs, cutTexts, 0)
		if err != nil {
			return drawn{}, err
		}
		p.Add(labels)
	}
	line, err := chart.BudgetLine(budgetMs, n)
	if err != nil {
		return drawn{}, err
	}
	p.Add(line)
	p.Legend.Add("budget "+format.Duration(budgetMs).String(), line)
	p.Legend.Top = true
	p.Legend.Left = true
	p.NominalX(names...)
	p.Y.Min, p.Y.Max = 0, top*1.45 // room for the legend and the labels above the bars
	chart.FitX(p, n)
	svg, err := chart.SVG(p, halfW, chartH)
	return drawn{
		Key: "latency-" + s.Name, Title: p.Title.Text, SVG: svg,
		Alt: fmt.Sprintf("bar chart of p50, p99 and max latency for each pattern of %s, with the %s budget as a dashed line", s.Name, format.Duration(budgetMs)),
	}, err
}

// ledgerChart draws one request's spend ledger as a waterfall: for each
// thing that took or refused time (an attempt, a fallback rung, a refusal),
// a bar from the budget left when it started down to what was left when it
// ended. The root package records one event per thing, so each appears once.
func ledgerChart(l Ledger) (drawn, error) {
	var base, spent plotter.Values
	var names []string
	var marks plotter.XYLabels
	for _, ev := range l.Events {
		if ev.Kind != budget.EventAttempt && ev.Kind != budget.EventFallback && ev.Kind != budget.EventRefuse {
			continue
		}
		startLeft := format.Millis(ev.Remaining)
		endLeft := max(startLeft-format.Millis(ev.Duration), 0)
		base = append(base, endLeft)
		spent = append(spent, startLeft-endLeft)
		names = append(names, strings.TrimPrefix(ev.Stage, "geometry."))
		note := ev.Outcome.String()
		switch ev.Kind {
		case budget.EventRefuse:
			note = "refused: " + note
		case budget.EventFallback:
			note = "fallback: " + note
		}
		marks.XYs = append(marks.XYs, plotter.XY{X: float64(len(names) - 1), Y: startLeft})
		marks.Labels = append(marks.Labels, note)
	}
	if len(names) == 0 {
		return drawn{}, fmt.Errorf("ledger of request %d has no hops", l.Request)
	}
	p := chart.NewBarPlot(fmt.Sprintf("%s, request %d: budget left, hop by hop", l.Scenario, l.Request), "budget left (ms)", names)
	p.Y.Min, p.Y.Max = 0, format.Millis(l.Budget)*1.3
	w := vg.Points(40)
	under, err := chart.Bars(base, w, chart.PaleBlue)
	if err != nil {
		return drawn{}, err
	}
	over, err := chart.Bars(spent, w, chart.Blue)
	if err != nil {
		return drawn{}, err
	}
	over.StackOn(under)
	labels, err := chart.ValueLabels(marks.XYs, marks.Labels, 0)
	if err != nil {
		return drawn{}, err
	}
	p.Add(under, over, labels)
	p.Legend.Add("left after it", under)
	p.Legend.Add("spent by it", over)
	// Top left: swatch first, then the text, which grows to the right into
	// free space. At the right, gonum ends each text at its swatch by
	// Liberation Sans's measure, and a browser drawing a wider face ran it
	// into the swatch and off the chart.
	p.Legend.Top = true
	p.Legend.Left = true
	chart.FitX(p, len(names))
	svg, err := chart.SVG(p, fullW, chartH)
	return drawn{
		Key: fmt.Sprintf("ledger-%s-%d", l.Scenario, l.Request), Title: p.Title.Text, SVG: svg,
		Alt: fmt.Sprintf("waterfall of the budget left at each hop of request %d (%s)", l.Request, l.Label),
	}, err
}

// goodputChart shows the overload case's goodput for each variant.
func goodputChart(o *Overload) (drawn, error) {
	vals := make(plotter.Values, len(o.Variants))
	names := make([]string, len(o.Variants))
	var xys, inside plotter.XYs
	var texts, insideTexts []string
	for i, v := range o.Variants {
		vals[i] = 100 * v.Goodput
		names[i] = twoLines(v.Name)
		// A bar near the top of the 100 % axis carries its label inside.
		if vals[i] > 88 {
			inside = append(inside, plotter.XY{X: float64(i), Y: vals[i]})
			insideTexts = append(insideTexts, format.Pct(v.Goodput))
		} else {
			xys = append(xys, plotter.XY{X: float64(i), Y: vals[i]})
			texts = append(texts, format.Pct(v.Goodput))
		}
	}
	p := chart.NewBarPlot("overload: other requests answered within the budget", "goodput (%)", names)
	chart.ShareAxis(p)
	b, err := chart.Bars(vals, vg.Points(46), chart.Blue)
	if err != nil {
		return drawn{}, err
	}
	labels, err := chart.ValueLabels(xys, texts, 0)
	if err != nil {
		return drawn{}, err
	}
	in, err := chart.InsideLabels(inside, insideTexts)
	if err != nil {
		return drawn{}, err
	}
	p.Add(b, labels, in)
	chart.FitX(p, len(o.Variants))
	svg, err := chart.SVG(p, halfW, chartH)
	return drawn{
		Key: "goodput", Title: p.Title.Text, SVG: svg,
		Alt: "bar chart of the goodput of unrelated requests for each overload variant",
	}, err
}

// heldLateChart shows, on a log scale, the worker time each overload
// variant held after its user's deadline had passed.
func heldLateChart(o *Overload) (drawn, error) {
	vals := make([]float64, len(o.Variants))
	names := make([]string, len(o.Variants))
	for i, v := range o.Variants {
		vals[i] = 1000 * v.WorkerSecondsLate
		names[i] = twoLines(v.Name)
	}
	return logBarChart("held-late", "overload: worker time after the user had left (log scale)", "worker time, summed",
		"bars on a log scale of the worker time each overload variant held after its user had left",
		names, vals, chart.Purple, halfW)
}
