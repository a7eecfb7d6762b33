package overload

import (
	"bytes"
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WriteSVG draws goodput, as a share of the capacity, against the offered
// load, one line per variant, with the ideal (min(load, 1)) dashed, for the
// report's first workload.
func (r *Report) WriteSVG(w io.Writer) error {
	if len(r.Workloads) == 0 {
		return fmt.Errorf("overload: the report has no workload to draw")
	}
	wl := r.Workloads[0]
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Goodput under overload, workload %s (capacity %.0f requests/s, budgets %s)", wl.Workload, wl.CapacityRPS, wl.Budgets)
	p.X.Label.Text = "offered load (× capacity)"
	p.Y.Label.Text = "goodput (× capacity)"
	p.Y.Min = 0
	p.Y.Max = 1.6 // room for the legend above the lines
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())

	var loads []float64
	for _, x := range wl.Runs {
		if len(loads) == 0 || loads[len(loads)-1] < x.Load {
			loads = append(loads, x.Load)
		}
	}
	if len(loads) > 0 {
		ideal := plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}, {X: loads[len(loads)-1], Y: 1}}
		l, err := plotter.NewLine(ideal)
		if err != nil {
			return err
		}
		l.Color = color.Gray{Y: 128}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		p.Add(l)
		p.Legend.Add("ideal", l)
	}
	for i, name := range uniqueVariants(wl.Runs) {
		var pts plotter.XYs
		for _, x := range wl.Runs {
			if x.Variant == name {
				pts = append(pts, plotter.XY{X: x.Load, Y: x.GoodputOfCapacity})
			}
		}
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		s.Color = plotutil.Color(i)
		s.Shape = draw.CircleGlyph{}
		p.Add(l, s)
		p.Legend.Add(name, l, s)
	}
	wt, err := p.WriterTo(7*vg.Inch, 4.5*vg.Inch, "svg")
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}
