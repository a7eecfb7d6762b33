package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/cmd/budget/internal/format"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The charts are drawn with gonum/plot, in Liberation Sans (gonum/plot's
// default is the serif face, which looks out of place on a sans-serif page),
// in colours from the Okabe–Ito palette, which stays distinguishable with
// every common form of colour blindness. Every bar also carries its value as
// a label, so no figure depends on telling colours apart.
func init() {
	plot.DefaultFont.Variant = "Sans"
	plotter.DefaultFont.Variant = "Sans"
}

// The Okabe–Ito palette (Okabe and Ito, "Color Universal Design", 2008).
var (
	okabeOrange     = color.RGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0xFF}
	okabeSkyBlue    = color.RGBA{R: 0x56, G: 0xB4, B: 0xE9, A: 0xFF}
	okabeBlue       = color.RGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xFF}
	okabeVermillion = color.RGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0xFF}
	okabePurple     = color.RGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xFF}
	okabeBlack      = color.RGBA{A: 0xFF}
	cutOffGrey      = color.RGBA{R: 0xB8, G: 0xB8, B: 0xB8, A: 0xFF}
	paleBlue        = color.RGBA{R: 0xDD, G: 0xE8, B: 0xF2, A: 0xFF}
)

// Colours of the three outcomes, used by the outcome chart and the page's
// legend alike.
var (
	colourInBudget = okabeBlue
	colourLate     = okabeOrange
	colourFailed   = okabeVermillion
)

// chart is a rendered PNG with the text an <img> needs. Key names the chart
// on the page (data-chart), so tests and readers can find it.
type chart struct {
	Key   string
	Title string
	Alt   string
	PNG   []byte
}

// Charts come in two widths: half of the page's column, two side by side,
// and the whole column.
const (
	halfW  = 5.4 * vg.Inch
	fullW  = 10.8 * vg.Inch
	chartH = 3.4 * vg.Inch
)

// renderPNG draws p as a PNG w wide and chartH high, at gonum/plot's 96 dpi.
func renderPNG(p *plot.Plot, w vg.Length) ([]byte, error) {
	wt, err := p.WriterTo(w, chartH, "png")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

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

// newBarPlot returns a plot for n categories with the given names, with room
// on both sides so the first and the last bar do not touch the frame.
func newBarPlot(title, yLabel string, names []string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(6)
	p.Y.Label.Text = yLabel
	p.NominalX(names...)
	return p
}

// fitX sets the x range after the bars were added (Add widens it to the
// data), leaving half a category of room at each end.
func fitX(p *plot.Plot, n int) { p.X.Min, p.X.Max = -0.6, float64(n)-0.4 }

// bars returns a bar series in colour c with no outline.
func bars(vals plotter.Values, w vg.Length, c color.Color) (*plotter.BarChart, error) {
	b, err := plotter.NewBarChart(vals, w)
	if err != nil {
		return nil, err
	}
	b.Color = c
	b.LineStyle.Width = 0
	return b, nil
}

// valueLabels returns labels placed just above points, centred.
func valueLabels(xys plotter.XYs, texts []string, dx vg.Length) (*plotter.Labels, error) {
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].XAlign = draw.XCenter
		l.TextStyle[i].YAlign = draw.YBottom
	}
	l.Offset = vg.Point{X: dx, Y: vg.Points(2)}
	return l, nil
}

// budgetLine returns a dashed horizontal line at y across n categories.
func budgetLine(y float64, n int) (*plotter.Line, error) {
	line, err := plotter.NewLine(plotter.XYs{{X: -0.6, Y: y}, {X: float64(n) - 0.4, Y: y}})
	if err != nil {
		return nil, err
	}
	line.Color = okabeBlack
	line.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	line.Width = vg.Points(1.2)
	return line, nil
}

// outcomeChart stacks, for each pattern, the share of requests answered in
// budget, answered late and failed: the first thing to look at, because a
// pattern whose latency sits on the budget line may still fail every request.
func outcomeChart(s Scenario) (chart, error) {
	n := len(s.Patterns)
	names := make([]string, n)
	in, late, failed := make(plotter.Values, n), make(plotter.Values, n), make(plotter.Values, n)
	for i, pr := range s.Patterns {
		names[i] = patternLabel(pr)
		in[i], late[i], failed[i] = 100*pr.AnsweredRatio, 100*pr.LateRatio, 100*pr.FailedRatio
	}
	p := newBarPlot(s.Name+": how each request ended", "share of requests (%)", names)
	p.Y.Min, p.Y.Max = 0, 142 // room for the legend above the bars
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 25, Label: "25"},
		{Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 100, Label: "100"}})
	w := vg.Points(46)
	var below *plotter.BarChart
	var xys plotter.XYs
	var texts []string
	for _, part := range []struct {
		label string
		vals  plotter.Values
		c     color.Color
	}{{"answered in budget", in, colourInBudget}, {"answered late", late, colourLate}, {"failed", failed, colourFailed}} {
		b, err := bars(part.vals, w, part.c)
		if err != nil {
			return chart{}, err
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
		p.Legend.Add(part.label, b)
		below = b
	}
	labels, err := valueLabels(xys, texts, 0)
	if err != nil {
		return chart{}, err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].Color = color.White
	}
	p.Add(labels)
	p.Legend.Top = true
	p.Legend.Left = true
	fitX(p, n)
	png, err := renderPNG(p, halfW)
	return chart{
		Key: "outcomes-" + s.Name, Title: p.Title.Text, PNG: png,
		Alt: fmt.Sprintf("stacked bars of the share of %s's requests answered in budget, answered late and failed, for each pattern", s.Name),
	}, err
}

// failureCostChart shows how long a failed request took to fail, per
// pattern: what a failure costs the user who waits for it.
func failureCostChart(s Scenario, budgetMs, safetyMs float64) (chart, error) {
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
	p := newBarPlot(s.Name+": time a failed request took to fail (median)", "milliseconds", names)
	p.Y.Min, p.Y.Max = 0, top*1.6 // room for the legend above the bars
	w := vg.Points(46)
	measured, err := bars(vals, w, colourFailed)
	if err != nil {
		return chart{}, err
	}
	cut, err := bars(grey, w, cutOffGrey)
	if err != nil {
		return chart{}, err
	}
	line, err := budgetLine(budgetMs, n)
	if err != nil {
		return chart{}, err
	}
	labels, err := valueLabels(xys, texts, 0)
	if err != nil {
		return chart{}, err
	}
	p.Add(measured, cut, line, labels)
	p.Legend.Add("measured", measured)
	p.Legend.Add("cut off by the demo, not measured", cut)
	p.Legend.Add("budget "+format.Duration(budgetMs).String(), line)
	p.Legend.Top = true
	p.Legend.Left = true
	fitX(p, n)
	png, err := renderPNG(p, halfW)
	return chart{
		Key: "failure-cost-" + s.Name, Title: p.Title.Text, PNG: png,
		Alt: fmt.Sprintf("bars of the median time a failed request of %s took to fail, for each pattern, with the %s budget as a dashed line", s.Name, format.Duration(budgetMs)),
	}, err
}

// logFloorMs is the smallest value the log-scale charts show: anything
// below it, zero included, is drawn at the axis.
const logFloorMs = 0.1

// logBarChart draws one bar per category on a logarithmic axis of
// milliseconds, each labelled with its value. gonum/plot's log scale cannot
// draw a bar from zero, so the bars are drawn as decades above logFloorMs
// and the axis is labelled in milliseconds or seconds.
func logBarChart(key, title, yLabel, alt string, names []string, valsMs []float64, c color.Color, w vg.Length) (chart, error) {
	n := len(valsMs)
	heights := make(plotter.Values, n)
	var xys plotter.XYs
	var texts []string
	top := 1.0
	for i, v := range valsMs {
		heights[i] = math.Log10(max(v, logFloorMs) / logFloorMs)
		top = max(top, heights[i])
		xys = append(xys, plotter.XY{X: float64(i), Y: heights[i]})
		texts = append(texts, format.Ms(v))
	}
	p := newBarPlot(title, yLabel, names)
	p.Y.Min, p.Y.Max = 0, math.Ceil(top)+0.6
	var ticks []plot.Tick
	for d := 0.0; d <= math.Ceil(top); d++ {
		ticks = append(ticks, plot.Tick{Value: d, Label: decadeLabel(logFloorMs * math.Pow(10, d))})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	b, err := bars(heights, vg.Points(46), c)
	if err != nil {
		return chart{}, err
	}
	labels, err := valueLabels(xys, texts, 0)
	if err != nil {
		return chart{}, err
	}
	p.Add(b, labels)
	fitX(p, n)
	png, err := renderPNG(p, w)
	return chart{Key: key, Title: title, Alt: alt, PNG: png}, err
}

// decadeLabel names a power of ten of milliseconds: 0.1ms, 1ms, … 1s, 10s.
func decadeLabel(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "s"
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + "ms"
}

// wastedChart shows, on a log scale, how long the dependencies kept working
// after their caller had gone: the figures differ by five orders of
// magnitude, which a linear axis would flatten to one visible bar.
func wastedChart(s Scenario) (chart, error) {
	names := make([]string, len(s.Patterns))
	vals := make([]float64, len(s.Patterns))
	for i, pr := range s.Patterns {
		names[i] = patternLabel(pr)
		vals[i] = pr.WastedWorkMs
	}
	return logBarChart("wasted-"+s.Name, s.Name+": work done after the caller had gone (log scale)",
		"dependency time, summed", fmt.Sprintf("bars on a log scale of the work %s's dependencies did after their caller had gone, for each pattern", s.Name),
		names, vals, okabePurple, halfW)
}

// latencyChart shows p50, p99 and max time to answer or fail for each pattern
// of a scenario, with the budget as a dashed line. A pattern whose every
// request was cut off by the load generator is drawn as one grey bar at the
// cut-off and labelled as such: those times are the demo's, not measured.
func latencyChart(s Scenario, budgetMs float64) (chart, error) {
	n := len(s.Patterns)
	names := make([]string, n)
	p := newBarPlot(s.Name+": time to answer or fail", "milliseconds", names)
	series := []struct {
		label string
		get   func(Latency) float64
		c     color.Color
	}{
		{"p50", func(l Latency) float64 { return l.P50 }, okabeSkyBlue},
		{"p99", func(l Latency) float64 { return l.P99 }, okabeBlue},
		{"max", func(l Latency) float64 { return l.Max }, okabePurple},
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
		b, err := bars(vals, w, sr.c)
		if err != nil {
			return chart{}, err
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
	cut, err := bars(grey, 3*w, cutOffGrey)
	if err != nil {
		return chart{}, err
	}
	p.Add(cut)
	p.Legend.Add("cut off by the demo", cut)
	if len(cutXYs) > 0 {
		labels, err := valueLabels(cutXYs, cutTexts, 0)
		if err != nil {
			return chart{}, err
		}
		p.Add(labels)
	}
	line, err := budgetLine(budgetMs, n)
	if err != nil {
		return chart{}, err
	}
	p.Add(line)
	p.Legend.Add("budget "+format.Duration(budgetMs).String(), line)
	p.Legend.Top = true
	p.Legend.Left = true
	p.NominalX(names...)
	p.Y.Min, p.Y.Max = 0, top*1.45 // room for the legend and the labels above the bars
	fitX(p, n)
	png, err := renderPNG(p, halfW)
	return chart{
		Key: "latency-" + s.Name, Title: p.Title.Text, PNG: png,
		Alt: fmt.Sprintf("bar chart of p50, p99 and max latency for each pattern of %s, with the %s budget as a dashed line", s.Name, format.Duration(budgetMs)),
	}, err
}

// ledgerChart draws one request's spend ledger as a waterfall: for each
// thing that took or refused time (an attempt, a fallback rung, a refusal),
// a bar from the budget left when it started down to what was left when it
// ended. The root package records one event per thing, so each appears once.
func ledgerChart(l Ledger) (chart, error) {
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
		return chart{}, fmt.Errorf("ledger of request %d has no hops", l.Request)
	}
	p := newBarPlot(fmt.Sprintf("%s, request %d: budget left, hop by hop", l.Scenario, l.Request), "budget left (ms)", names)
	p.Y.Min, p.Y.Max = 0, format.Millis(l.Budget)*1.3
	w := vg.Points(40)
	under, err := bars(base, w, paleBlue)
	if err != nil {
		return chart{}, err
	}
	over, err := bars(spent, w, okabeBlue)
	if err != nil {
		return chart{}, err
	}
	over.StackOn(under)
	labels, err := valueLabels(marks.XYs, marks.Labels, 0)
	if err != nil {
		return chart{}, err
	}
	p.Add(under, over, labels)
	p.Legend.Add("left after it", under)
	p.Legend.Add("spent by it", over)
	p.Legend.Top = true
	fitX(p, len(names))
	png, err := renderPNG(p, fullW)
	return chart{
		Key: fmt.Sprintf("ledger-%s-%d", l.Scenario, l.Request), Title: p.Title.Text, PNG: png,
		Alt: fmt.Sprintf("waterfall of the budget left at each hop of request %d (%s)", l.Request, l.Label),
	}, err
}

// goodputChart shows the overload case's goodput for each variant.
func goodputChart(o *Overload) (chart, error) {
	vals := make(plotter.Values, len(o.Variants))
	names := make([]string, len(o.Variants))
	var xys plotter.XYs
	var texts []string
	for i, v := range o.Variants {
		vals[i] = 100 * v.Goodput
		names[i] = twoLines(v.Name)
		xys = append(xys, plotter.XY{X: float64(i), Y: vals[i]})
		texts = append(texts, format.Pct(v.Goodput))
	}
	p := newBarPlot("overload: other requests answered within the budget", "goodput (%)", names)
	p.Y.Min, p.Y.Max = 0, 115
	b, err := bars(vals, vg.Points(46), okabeBlue)
	if err != nil {
		return chart{}, err
	}
	labels, err := valueLabels(xys, texts, 0)
	if err != nil {
		return chart{}, err
	}
	p.Add(b, labels)
	fitX(p, len(o.Variants))
	png, err := renderPNG(p, halfW)
	return chart{
		Key: "goodput", Title: p.Title.Text, PNG: png,
		Alt: "bar chart of the goodput of unrelated requests for each overload variant",
	}, err
}

// heldLateChart shows, on a log scale, the worker time each overload
// variant held after its user's deadline had passed.
func heldLateChart(o *Overload) (chart, error) {
	vals := make([]float64, len(o.Variants))
	names := make([]string, len(o.Variants))
	for i, v := range o.Variants {
		vals[i] = 1000 * v.WorkerSecondsLate
		names[i] = twoLines(v.Name)
	}
	return logBarChart("held-late", "overload: worker time after the user had left (log scale)", "worker time, summed",
		"bars on a log scale of the worker time each overload variant held after its user had left",
		names, vals, okabePurple, halfW)
}
