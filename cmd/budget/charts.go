package main

import (
	"bytes"
	"fmt"
	"image/color"
	"strings"

	"github.com/timebudget/budget"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// chart is a rendered PNG with the text an <img> needs.
type chart struct {
	Title string
	Alt   string
	PNG   []byte
}

const (
	chartW = 9 * vg.Inch
	chartH = 3.6 * vg.Inch
)

func renderPNG(p *plot.Plot) ([]byte, error) {
	wt, err := p.WriterTo(chartW, chartH, "png")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// latencyChart shows p50, p99 and max time to answer or fail for each pattern
// of a scenario, with the budget as a dashed line.
func latencyChart(s scenarioReport, budgetMs float64) (chart, error) {
	p := plot.New()
	p.Title.Text = s.Name + ": time to answer or fail, by pattern"
	p.Y.Label.Text = "milliseconds"
	p.Y.Min = 0
	names := make([]string, len(s.Patterns))
	series := []struct {
		label string
		get   func(latencyReport) float64
	}{
		{"p50", func(l latencyReport) float64 { return l.P50 }},
		{"p99", func(l latencyReport) float64 { return l.P99 }},
		{"max", func(l latencyReport) float64 { return l.Max }},
	}
	w := vg.Points(28)
	top := budgetMs
	for i, sr := range series {
		vals := make(plotter.Values, len(s.Patterns))
		for j, pr := range s.Patterns {
			vals[j] = sr.get(pr.LatencyMs)
			names[j] = pr.Name
			top = max(top, vals[j])
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return chart{}, err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(i-1) * w
		p.Add(bars)
		p.Legend.Add(sr.label, bars)
	}
	line, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: budgetMs}, {X: float64(len(s.Patterns)) - 0.5, Y: budgetMs}})
	if err != nil {
		return chart{}, err
	}
	line.Color = color.RGBA{R: 200, A: 255}
	line.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	line.Width = vg.Points(1.5)
	p.Add(line)
	p.Legend.Add(fmt.Sprintf("budget %s", msDur(budgetMs)), line)
	p.Legend.Top = true
	p.Y.Max = top * 1.3 // room for the legend above the bars
	p.NominalX(names...)
	png, err := renderPNG(p)
	return chart{
		Title: p.Title.Text,
		Alt:   fmt.Sprintf("bar chart of p50, p99 and max latency for each pattern of %s, with the %s budget as a dashed line", s.Name, msDur(budgetMs)),
		PNG:   png,
	}, err
}

// ledgerChart draws one request's spend ledger as a waterfall: for each hop,
// a bar from the budget left when it started down to what was left when it
// ended. Refused hops take no time and are marked.
func ledgerChart(l ledgerReport) (chart, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s, request %d: budget left, hop by hop", l.Scenario, l.Request)
	p.Y.Label.Text = "budget left (ms)"
	p.Y.Min = 0
	p.Y.Max = ms(l.budget) * 1.3
	var base, spent plotter.Values
	var names []string
	var marks plotter.XYLabels
	for _, ev := range l.events {
		if ev.Kind != budget.EventAttempt && ev.Kind != budget.EventFallback && ev.Kind != budget.EventRefuse {
			continue
		}
		startLeft := ms(ev.Remaining)
		endLeft := max(startLeft-ms(ev.Duration), 0)
		base = append(base, endLeft)
		spent = append(spent, startLeft-endLeft)
		name := strings.TrimPrefix(ev.Stage, "geometry.")
		names = append(names, name)
		note := ev.Outcome.String()
		if ev.Kind == budget.EventRefuse {
			note = "refused"
		}
		marks.XYs = append(marks.XYs, plotter.XY{X: float64(len(names) - 1), Y: startLeft})
		marks.Labels = append(marks.Labels, note)
	}
	if len(names) == 0 {
		return chart{}, fmt.Errorf("ledger of request %d has no hops", l.Request)
	}
	w := vg.Points(40)
	under, err := plotter.NewBarChart(base, w)
	if err != nil {
		return chart{}, err
	}
	under.Color = color.RGBA{R: 225, G: 232, B: 240, A: 255}
	under.LineStyle.Width = 0
	over, err := plotter.NewBarChart(spent, w)
	if err != nil {
		return chart{}, err
	}
	over.Color = plotutil.Color(1)
	over.LineStyle.Width = 0
	over.StackOn(under)
	p.Add(under, over)
	p.Legend.Add("left after the hop", under)
	p.Legend.Add("spent by the hop", over)
	p.Legend.Top = true
	labels, err := plotter.NewLabels(marks)
	if err != nil {
		return chart{}, err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].XAlign = draw.XCenter
		labels.TextStyle[i].YAlign = draw.YBottom
	}
	p.Add(labels)
	p.NominalX(names...)
	png, err := renderPNG(p)
	return chart{
		Title: p.Title.Text,
		Alt:   fmt.Sprintf("waterfall of the budget left at each hop of request %d (%s)", l.Request, l.Label),
		PNG:   png,
	}, err
}

// goodputChart shows the overload case's goodput for each variant.
func goodputChart(o *overloadReport) (chart, error) {
	p := plot.New()
	p.Title.Text = "overload: goodput of the requests that do not touch the slow dependency"
	p.Y.Label.Text = "answered within the budget (%)"
	p.Y.Min, p.Y.Max = 0, 105
	vals := make(plotter.Values, len(o.Variants))
	names := make([]string, len(o.Variants))
	for i, v := range o.Variants {
		vals[i] = 100 * v.Goodput
		names[i] = v.Name
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(60))
	if err != nil {
		return chart{}, err
	}
	bars.Color = plotutil.Color(2)
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(names...)
	png, err := renderPNG(p)
	return chart{
		Title: p.Title.Text,
		Alt:   "bar chart of the goodput of unrelated requests for each overload variant",
		PNG:   png,
	}, err
}
