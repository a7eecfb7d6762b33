package chart

import (
	"bytes"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// TestSeriesNeverAnOutcome checks that no series colour is an outcome's, so
// a p50 bar never reads as failed, and that a chart's first four series
// differ.
func TestSeriesNeverAnOutcome(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := range 4 {
		c := Hex(Series(i))
		for _, o := range []string{Hex(InBudget), Hex(Late), Hex(Failed)} {
			if c == o {
				t.Errorf("series %d has the outcome colour %s", i, c)
			}
		}
		if seen[c] {
			t.Errorf("series %d repeats %s", i, c)
		}
		seen[c] = true
	}
	if Hex(Failed) != "#D55E00" || Hex(Black) != "#000000" {
		t.Errorf("Hex: failed %s, black %s", Hex(Failed), Hex(Black))
	}
}

// TestLogBarsSpanMagnitudes draws 1,327 s beside 44,415 s and 0: each bar
// gets a height of its own decade, and the SVG carries both labels.
func TestLogBarsSpanMagnitudes(t *testing.T) {
	t.Parallel()
	p, err := LogBars("wasted", "worker time", []string{"a", "b", "c"}, []float64{1_327_000, 44_415_000, 0}, Purple,
		func(v float64) string { return strings.TrimSuffix(DecadeLabel(v), "s") + "s" })
	if err != nil {
		t.Fatal(err)
	}
	if p.Y.Max < 9 || p.Y.Max > 10 {
		t.Errorf("axis to %.1f decades above 0.1ms, want about 9 (44,415 s)", p.Y.Max)
	}
	svg, err := SVG(p, 5*vg.Inch, 3*vg.Inch)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "1327s", "44415s"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}
