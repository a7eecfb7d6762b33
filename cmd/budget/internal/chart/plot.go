package chart

import (
	"bytes"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// gonum/plot's default face is serif, which looks out of place on the
// reports' sans-serif pages.
func init() {
	plot.DefaultFont.Variant = "Sans"
	plotter.DefaultFont.Variant = "Sans"
}

// SVG renders p as an SVG document w wide and h high. A page embeds it as
// an image (data URL) or inline.
func SVG(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// NewBarPlot returns a plot for categories with the given names, its title
// and y label set.
func NewBarPlot(title, yLabel string, names []string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(6)
	p.Y.Label.Text = yLabel
	p.NominalX(names...)
	return p
}

// FitX sets the x range after the bars were added (Add widens it to the
// data), leaving half a category of room at each end so the first and the
// last bar do not touch the frame.
func FitX(p *plot.Plot, n int) { p.X.Min, p.X.Max = -0.6, float64(n)-0.4 }

// Bars returns a bar series in colour c with no outline.
func Bars(vals plotter.Values, w vg.Length, c color.Color) (*plotter.BarChart, error) {
	b, err := plotter.NewBarChart(vals, w)
	if err != nil {
		return nil, err
	}
	b.Color = c
	b.LineStyle.Width = 0
	return b, nil
}

// ValueLabels returns labels placed just above points, centred, shifted dx
// to the right.
func ValueLabels(xys plotter.XYs, texts []string, dx vg.Length) (*plotter.Labels, error) {
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

// BudgetLine returns a dashed black horizontal line at y across n
// categories: the budget the bars are read against.
func BudgetLine(y float64, n int) (*plotter.Line, error) {
	line, err := plotter.NewLine(plotter.XYs{{X: -0.6, Y: y}, {X: float64(n) - 0.4, Y: y}})
	if err != nil {
		return nil, err
	}
	line.Color = Black
	line.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	line.Width = vg.Points(1.2)
	return line, nil
}

// ShareAxis makes p's y axis a share in percent, from 0 to 100 and no
// further: a share above 100 % does not exist, so the axis never shows one.
// Labels of bars that reach the top go inside the bar (see InsideLabels).
func ShareAxis(p *plot.Plot) {
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 25, Label: "25"},
		{Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 100, Label: "100"}})
}

// InsideLabels returns labels hung just below the points, in white, for
// bars whose top is the axis's: inside the bar they stay within the plot.
func InsideLabels(xys plotter.XYs, texts []string) (*plotter.Labels, error) {
	l, err := ValueLabels(xys, texts, 0)
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].YAlign = draw.YTop
		l.TextStyle[i].Color = color.White
	}
	l.Offset = vg.Point{Y: -vg.Points(3)}
	return l, nil
}

// LogFloorMs is the smallest value LogBars shows: anything below it, zero
// included, is drawn at the axis.
const LogFloorMs = 0.1

// LogBars draws one bar per category on a logarithmic axis of
// milliseconds, each bar labelled with its value as label writes it.
// gonum/plot's log scale cannot draw a bar from zero, so the bars are drawn
// as decades above LogFloorMs and the axis is labelled in milliseconds or
// seconds. It is the scale for figures that differ by orders of magnitude:
// on a linear axis 1,327 s beside 44,415 s would be no bar at all.
func LogBars(title, yLabel string, names []string, valsMs []float64, c color.Color, label func(float64) string) (*plot.Plot, error) {
	n := len(valsMs)
	heights := make(plotter.Values, n)
	var xys plotter.XYs
	var texts []string
	top := 1.0
	for i, v := range valsMs {
		heights[i] = math.Log10(max(v, LogFloorMs) / LogFloorMs)
		top = max(top, heights[i])
		xys = append(xys, plotter.XY{X: float64(i), Y: heights[i]})
		texts = append(texts, label(v))
	}
	p := NewBarPlot(title, yLabel, names)
	p.Y.Min, p.Y.Max = 0, math.Ceil(top)+0.6
	var ticks []plot.Tick
	for d := 0.0; d <= math.Ceil(top); d++ {
		ticks = append(ticks, plot.Tick{Value: d, Label: DecadeLabel(LogFloorMs * math.Pow(10, d))})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	b, err := Bars(heights, vg.Points(46), c)
	if err != nil {
		return nil, err
	}
	labels, err := ValueLabels(xys, texts, 0)
	if err != nil {
		return nil, err
	}
	p.Add(b, labels)
	FitX(p, n)
	return p, nil
}

// DecadeLabel names a power of ten of milliseconds: 0.1ms, 1ms, … 1s, 10s.
func DecadeLabel(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "s"
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + "ms"
}
