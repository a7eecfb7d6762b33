package sim

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// chart is a rendered SVG with the text around it.
type chart struct {
	Title string
	Alt   string
	SVG   template.HTML
}

// The charts have the size and palette of budget demo's report.
const (
	chartW = 9 * vg.Inch
	chartH = 3.6 * vg.Inch
)

func renderSVG(p *plot.Plot, title, alt string) (chart, error) {
	// The page's heading names the chart; a second title inside it would
	// only repeat it.
	p.Title.Text = ""
	wt, err := p.WriterTo(chartW, chartH, "svg")
	if err != nil {
		return chart{}, err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return chart{}, err
	}
	svg := buf.String()
	// Drop the XML prolog so the SVG can sit inline in the page.
	if i := strings.Index(svg, "<svg"); i > 0 {
		svg = svg[i:]
	}
	svg = strings.Replace(svg, "<svg", fmt.Sprintf(`<svg role="img" aria-label="%s"`, template.HTMLEscapeString(alt)), 1)
	return chart{Title: title, Alt: alt, SVG: template.HTML(svg)}, nil
}

func names(r *Report) []string {
	out := make([]string, len(r.Results))
	for i, res := range r.Results {
		out[i] = res.Name
	}
	return out
}

// outcomeChart stacks the shares answered in budget, late and failed.
func outcomeChart(r *Report) (chart, error) {
	p := plot.New()
	p.Y.Label.Text = "share of requests (%)"
	p.Y.Min, p.Y.Max = 0, 130
	w := vg.Points(60)
	var below *plotter.BarChart
	for i, s := range []struct {
		label string
		get   func(Result) float64
		c     color.Color
	}{
		{"in budget", func(x Result) float64 { return x.InBudget }, plotutil.Color(2)},
		{"late", func(x Result) float64 { return x.Late }, plotutil.Color(4)},
		{"failed", func(x Result) float64 { return x.Failed }, plotutil.Color(0)},
	} {
		vals := make(plotter.Values, len(r.Results))
		for j, res := range r.Results {
			vals[j] = 100 * s.get(res)
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return chart{}, err
		}
		bars.Color = s.c
		bars.LineStyle.Width = 0
		if i > 0 {
			bars.StackOn(below)
		}
		below = bars
		p.Add(bars)
		p.Legend.Add(s.label, bars)
	}
	p.Legend.Top = true
	p.NominalX(names(r)...)
	return renderSVG(p, "what the user got, by pattern", "stacked bars of the share of requests answered in budget, late and failed for each pattern")
}

// latencyChart shows p50 and p99 of all requests and of failures, with the
// budget as a dashed line.
func latencyChart(r *Report) (chart, error) {
	p := plot.New()
	p.Y.Label.Text = "milliseconds"
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
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return chart{}, err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(2*i-3) * w / 2
		p.Add(bars)
		p.Legend.Add(s.label, bars)
	}
	line, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: r.BudgetMs}, {X: float64(len(r.Results)) - 0.5, Y: r.BudgetMs}})
	if err != nil {
		return chart{}, err
	}
	line.Color = color.RGBA{R: 200, A: 255}
	line.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	line.Width = vg.Points(1.5)
	p.Add(line)
	p.Legend.Add("budget "+fmtMs(r.BudgetMs), line)
	p.Legend.Top = true
	p.Y.Max = top * 1.7 // room for the five-line legend above the bars
	p.NominalX(names(r)...)
	return renderSVG(p, "time to answer or fail, by pattern", fmt.Sprintf("bar chart of p50 and p99 latency, of all requests and of failures, for each pattern, with the %s budget as a dashed line", fmtMs(r.BudgetMs)))
}

// wasteChart shows the worker time held after requests were given up.
func wasteChart(r *Report) (chart, error) {
	p := plot.New()
	p.Y.Label.Text = "worker-seconds"
	p.Y.Min = 0
	vals := make(plotter.Values, len(r.Results))
	for i, res := range r.Results {
		vals[i] = res.WastedWorkSeconds
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(60))
	if err != nil {
		return chart{}, err
	}
	bars.Color = plotutil.Color(1)
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(names(r)...)
	return renderSVG(p, "wasted work: worker time after the request was given up", "bar chart of wasted worker-seconds for each pattern")
}

// RenderHTML renders report.html: one self-contained page with inline CSS
// and the charts as inline SVG.
func (r *Report) RenderHTML() ([]byte, error) {
	var charts []chart
	for _, f := range []func(*Report) (chart, error){outcomeChart, latencyChart, wasteChart} {
		c, err := f(r)
		if err != nil {
			return nil, err
		}
		charts = append(charts, c)
	}
	var buf bytes.Buffer
	err := pageTemplate.Execute(&buf, struct {
		*Report
		Charts []chart
	}{r, charts})
	return buf.Bytes(), err
}

var pageTemplate = template.Must(template.New("sim").Funcs(template.FuncMap{
	"ms": fmtMs, "pct": pct, "secs": fmtSeconds, "counts": counts, "dash": orDash,
	"gt0":   func(x float64) bool { return x > 0 },
	"float": func(n int) float64 { return float64(n) },
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>budget sim report: {{.File}}</title>
<style>
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2733; margin: 2rem auto; max-width: 1100px; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #d5dde6; padding-bottom: .2rem; }
.sub { color: #556; margin-top: 0; }
table { border-collapse: collapse; margin: .8rem 0 1.2rem; font-size: 13.5px; width: 100%; }
th, td { border-bottom: 1px solid #e3e8ee; padding: .3rem .5rem; text-align: right; vertical-align: top; }
th { background: #f3f6f9; font-weight: 600; }
td.l, th.l { text-align: left; }
figure.chart { margin: .6rem 0; border: 1px solid #e3e8ee; }
figure.chart svg { display: block; max-width: 100%; height: auto; }
ul.notes li { margin: .3rem 0; }
</style>
</head>
<body>
<h1>budget sim: {{.File}}</h1>
<p class="sub">{{.Services}} services, entry {{.Entry}} · {{.Traffic}} · simulated in {{printf "%.1f" .WallSeconds}} s</p>
<p>The same traffic and faults under four patterns: per-call timeouts, one shared deadline, a shared deadline with admission, and no timeout at all.</p>
<table class="patterns">
<thead><tr><th class="l">pattern</th><th>p50</th><th>p99</th><th>in budget</th><th>late</th><th>failed</th><th>failure p50</th><th>failure p99</th><th>wasted work</th><th>goodput</th>{{if .Faults}}<th>others in budget</th>{{end}}<th class="l">refused before starting</th></tr></thead>
<tbody>
{{range .Results}}<tr data-pattern="{{.Pattern}}"><td class="l">{{.Name}}</td><td>{{ms .LatencyMs.P50}}</td><td>{{ms .LatencyMs.P99}}</td><td>{{pct .InBudget}}</td><td>{{pct .Late}}</td><td>{{pct .Failed}}</td><td>{{dash (gt0 .Failed) (ms .FailureLatencyMs.P50)}}</td><td>{{dash (gt0 .Failed) (ms .FailureLatencyMs.P99)}}</td><td>{{secs .WastedWorkSeconds}}</td><td>{{printf "%.0f" .GoodputPerSecond}}/s</td>{{if $.Faults}}<td>{{dash (gt0 (float .Others)) (pct .OthersInBudget)}}</td>{{end}}<td class="l">{{counts .RefusedBeforeStarting}}</td></tr>
{{end}}</tbody>
</table>
{{range .Charts}}<h2>{{.Title}}</h2>
<figure class="chart">{{.SVG}}</figure>
{{end}}
<h2>how to read this</h2>
<ul class="notes">
{{range .Notes}}<li>{{.}}</li>
{{end}}</ul>
</body>
</html>
`))
