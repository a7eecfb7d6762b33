package report

import (
	"strings"
	"testing"

	"github.com/timebudget/budget/cmd/budget/internal/chart"
)

func TestFormatFigure(t *testing.T) {
	t.Parallel()
	cases := []struct {
		unit    string
		v       any
		want    string
		wantErr bool
	}{
		{"ms", 12.34, "12ms", false},
		{"dur", 300.0, "300ms", false},
		{"pct", 0.16, "16%", false},
		{"x", 0.5, "0.5×", false},
		{"s1", 351.34, "351.3 s", false},
		{"int", 120, "120", false},
		{"int", int64(328), "328", false},
		{"ms", "12", "", true},
		{"furlongs", 1.0, "", true},
	}
	for _, tc := range cases {
		got, err := FormatFigure(tc.unit, tc.v)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("formatFigure(%q, %v) = %q, %v; want %q, error %v", tc.unit, tc.v, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestFigureTagsItsPlace checks the span every figure of the page is
// written in: the path and the unit a test needs to find the same figure in
// report.json, and the text escaped.
func TestFigureTagsItsPlace(t *testing.T) {
	t.Parallel()
	got, err := figure(jsonPath("scenarios", 0, "patterns", 2, "answered_ratio"), "pct", 0.5)
	if err != nil {
		t.Fatal(err)
	}
	want := `<span class="fig" data-k="scenarios.0.patterns.2.answered_ratio" data-unit="pct">50%</span>`
	if string(got) != want {
		t.Errorf("figure = %s, want %s", got, want)
	}
	if _, err := figure("x", "pct", "not a number"); err == nil || !strings.Contains(err.Error(), "figure x") {
		t.Errorf("a figure that is not a number: err = %v, want one naming the figure", err)
	}
}

func TestHexColour(t *testing.T) {
	t.Parallel()
	if got := chart.Hex(chart.Vermillion); got != "#D55E00" {
		t.Errorf("chart.Hex(chart.Vermillion) = %s, want #D55E00", got)
	}
}
