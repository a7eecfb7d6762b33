package sim

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"image/color"
	"strings"

	"github.com/timebudget/budget/cmd/budget/internal/chart"
	"github.com/timebudget/budget/cmd/budget/internal/format"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// drawn is a rendered chart, inline SVG, with the text around it.
type drawn struct {
	Title string
	Alt   string
	SVG   template.HTML
}

// Charts span the page's column; they are drawn in package chart's style,
// as budget demo's are.
const (
	chartW = 9 * vg.Inch
	chartH = 3.6 * vg.Inch
)

// inline renders p for the page: the SVG without its XML prolog, so it can
// sit inline, labelled for screen readers with alt. The page's heading names
// the chart, so a second title inside it would only repeat it.
func inline(p *plot.Plot, title, alt string) (drawn, error) {
	p.Title.Text = ""
	b, err := chart.SVG(p, chartW, chartH)
	if err != nil {
		return drawn{}, err
	}
	svg := string(b)
	if i := strings.Index(svg, "<svg"); i > 0 {
		svg = svg[i:]
	}
	svg = strings.Replace(svg, "<svg", fmt.Sprintf(`<svg role="img" aria-label="%s"`, template.HTMLEscapeString(alt)), 1)
	return drawn{Title: title, Alt: alt, SVG: template.HTML(svg)}, nil
}

// names lists the patterns' names, in report order.
func names(r *Report) []string {
	out := make([]string, len(r.Results))
	for i, res := range r.Results {
		out[i] = res.Name
	}
	return out
}

// outcomeChart stacks the shares answered in budget, late and failed, on an
// axis that stops at 100 %; the page's key names the colours.
func outcomeChart(r *Report) (drawn, error) {
	p := chart.NewBarPlot("", "share of requests (%)", names(r))
	chart.ShareAxis(p)
	w := vg.Points(60)
	var below *plotter.BarChart
	var xys plotter.XYs
	var texts []string
	for _, s := range []struct {
		get func(Result) float64
		c   color.Color
	}{
		{func(x Result) float64 { return x.InBudget }, chart.InBudget},
		{func(x Result) float64 { return x.Late }, chart.Late},
		{func(x Result) float64 { return x.Failed }, chart.Failed},
	} {
		vals := make(plotter.Values, len(r.Results))
		for j, res := range r.Results {
			vals[j] = 100 * s.get(res)
		}
		bars, err := chart.Bars(vals, w, s.c)
		if err != nil {
			return drawn{}, err
		}
		for j, v := range vals {
			if v >= 7 { // a label fits inside the segment
				base := 0.0
				if below != nil {
					base = below.BarHeight(j)
				}
				xys = append(xys, plotter.XY{X: float64(j), Y: base + v/2 - 3})
				texts = append(texts, format.Pct(v/100))
			}
		}
		if below != nil {
			bars.StackOn(below)
		}
		below = bars
		p.Add(bars)
	}
	labels, err := chart.ValueLabels(xys, texts, 0)
	if err != nil {
		return drawn{}, err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].Color = color.White
	}
	p.Add(labels)
	chart.FitX(p, len(r.Results))
	return inline(p, "what the user got, by pattern", "stacked bars of the share of requests answered in budget, late and failed for each pattern")
}

// latencyChart shows p50 and p99 of all requests and of failures, each
// series in its own colour, with the budget as a dashed line.
func latencyChart(r *Report) (drawn, error) {
	p := chart.NewBarPlot("", "milliseconds", names(r))
	p.Y.Min = 0
	top := r.BudgetMs
	w := vg.Points(22)
	series := []struct {
		label string
		get   func(Result) float64
	}{
		{"p50", func(x Result) float64 { return x.LatencyMs.P50 }},
		{"p99", func(x Result) float64 { return x.LatencyMs.P99 }},
		{"failure p50", func(x Result) float64 { return x.FailureLatencyMs.P50 }},
		{"failure p99", func(x Result) float64 { return x.FailureLatencyMs.P99 }},
	}
	for i, s := range series {
		vals := make(plotter.Values, len(r.Results))
		for j, res := range r.Results {
			vals[j] = s.get(res)
			top = max(top, vals[j])
		}
		bars, err := chart.Bars(vals, w, chart.Series(i))
		if err != nil {
			return drawn{}, err
		}
		bars.Offset = vg.Length(2*i-3) * w / 2
		p.Add(bars)
		p.Legend.Add(s.label, bars)
	}
	line, err := chart.BudgetLine(r.BudgetMs, len(r.Results))
	if err != nil {
		return drawn{}, err
	}
	p.Add(line)
	p.Legend.Add("budget "+format.Ms(r.BudgetMs), line)
	p.Legend.Top = true
	p.Y.Max = top * 1.7 // room for the five-line legend above the bars
	chart.FitX(p, len(r.Results))
	return inline(p, "time to answer or fail, by pattern", fmt.Sprintf("bar chart of p50 and p99 latency, of all requests and of failures, for each pattern, with the %s budget as a dashed line", format.Ms(r.BudgetMs)))
}

// wasteChart shows the worker time held after requests were given up, on a
// log scale: the patterns differ by orders of magnitude (1,327 s beside
// 44,415 s), which a linear axis would flatten to one visible bar.
func wasteChart(r *Report) (drawn, error) {
	vals := make([]float64, len(r.Results))
	for i, res := range r.Results {
		vals[i] = 1000 * res.WastedWorkSeconds
	}
	p, err := chart.LogBars("", "worker time (log scale)", names(r), vals, chart.Purple,
		func(ms float64) string { return format.Seconds(ms / 1000) })
	if err != nil {
		return drawn{}, err
	}
	return inline(p, "wasted work: worker time after the request was given up (log scale)", "bar chart on a log scale of wasted worker time for each pattern")
}

// RenderHTML renders report.html: one self-contained page with inline CSS
// and the charts as inline SVG.
func (r *Report) RenderHTML() ([]byte, error) {
	var charts []drawn
	for _, f := range []func(*Report) (drawn, error){outcomeChart, latencyChart, wasteChart} {
		c, err := f(r)
		if err != nil {
			return nil, err
		}
		charts = append(charts, c)
	}
	var buf bytes.Buffer
	err := pageTemplate.Execute(&buf, struct {
		*Report
		Charts  []drawn
		Colours map[string]string
	}{r, charts, map[string]string{"in": chart.Hex(chart.InBudget), "late": chart.Hex(chart.Late), "failed": chart.Hex(chart.Failed)}})
	return buf.Bytes(), err
}

// pageHTML is report.html's template.
//
//go:embed report.html.tmpl
var pageHTML string

var pageTemplate = template.Must(template.New("sim").Funcs(template.FuncMap{
	"ms": format.Ms, "pct": format.Pct, "secs": format.Seconds, "counts": format.Counts[int64], "dash": format.OrDash,
	"gt0":   func(x float64) bool { return x > 0 },
	"float": func(n int) float64 { return float64(n) },
}).Parse(pageHTML))
