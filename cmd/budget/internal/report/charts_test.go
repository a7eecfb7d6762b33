package report

import (
	"encoding/xml"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/cmd/budget/internal/chart"
)

// syntheticScenario has the cases the charts must draw: a pattern with no
// failures, one whose every request the demo cut off, and no wasted work.
func syntheticScenario() Scenario {
	lat := func(p50, p99, max float64) Latency { return Latency{P50: p50, P99: p99, Max: max} }
	return Scenario{Name: "geo", Patterns: []Pattern{
		{Name: "per-call timeouts", Key: "per-call", Requests: 10, LateRatio: 1, WastedWorkMs: 295000, LatencyMs: lat(446, 454, 456)},
		{Name: "shared deadline", Key: "shared", Requests: 10, LateRatio: 0.16, FailedRatio: 0.84, FailureCostMs: 303, WastedWorkMs: 12, LatencyMs: lat(303, 308, 308)},
		{Name: "deadline + admission", Key: "admission", Requests: 10, AnsweredRatio: 1, WastedWorkMs: 0, LatencyMs: lat(48, 269, 269)},
		{Name: "no timeout", Key: "none", Requests: 10, CutOff: 10, FailedRatio: 1, FailureReasons: map[string]int{"cut-off": 10}, FailureCostMs: 900, WastedWorkMs: 271000, LatencyMs: lat(901, 904, 904)},
	}}
}

// TestChartsDraw draws every chart of the report from synthetic figures and
// checks each is an SVG document of the size its place on the page needs.
func TestChartsDraw(t *testing.T) {
	t.Parallel()
	s := syntheticScenario()
	o := &Overload{Variants: []Variant{
		{Name: "no timeout", Goodput: 0.33, WorkerSecondsLate: 351.3},
		{Name: "budget", Goodput: 1, WorkerSecondsLate: 0},
	}}
	l := Ledger{Scenario: "geo", Request: 7, Budget: 300 * time.Millisecond, Events: []budget.Event{
		{Kind: budget.EventAttempt, Stage: "resolve", Duration: 15 * time.Millisecond, Remaining: 300 * time.Millisecond, Outcome: budget.OutcomeOK},
		{Kind: budget.EventRefuse, Stage: "geometry.exact", Remaining: 285 * time.Millisecond, Outcome: budget.OutcomeInsufficient},
		{Kind: budget.EventFallback, Stage: "geometry.cache", Duration: time.Millisecond, Remaining: 285 * time.Millisecond, Outcome: budget.OutcomeOK},
	}}
	cases := []struct {
		key  string
		draw func() (drawn, error)
		wide bool
	}{
		{"outcomes-geo", func() (drawn, error) { return outcomeChart(s) }, false},
		{"failure-cost-geo", func() (drawn, error) { return failureCostChart(s, 300, 900) }, false},
		{"wasted-geo", func() (drawn, error) { return wastedChart(s) }, false},
		{"latency-geo", func() (drawn, error) { return latencyChart(s, 300) }, false},
		{"goodput", func() (drawn, error) { return goodputChart(o) }, false},
		{"held-late", func() (drawn, error) { return heldLateChart(o) }, false},
		{"ledger-geo-7", func() (drawn, error) { return ledgerChart(l) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			t.Parallel()
			c, err := tc.draw()
			if err != nil {
				t.Fatal(err)
			}
			if c.Key != tc.key || c.Title == "" || c.Alt == "" {
				t.Errorf("chart key %q, title %q, alt %q; want key %q and a title and alt text", c.Key, c.Title, c.Alt, tc.key)
			}
			var root struct {
				XMLName xml.Name
				Width   string `xml:"width,attr"`
				Height  string `xml:"height,attr"`
			}
			if err := xml.Unmarshal(c.SVG, &root); err != nil || root.XMLName.Local != "svg" {
				t.Fatalf("not an SVG document (%v): %.200s", err, c.SVG)
			}
			// Legends and labels fit inside the chart in whatever sans-serif
			// face the browser has (the ledger's legend once ran off the
			// right edge).
			outside, err := textsOutside(c.SVG)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range outside {
				t.Errorf("text does not fit: %s", o)
			}
			want := halfW
			if tc.wide {
				want = fullW
			}
			w, errW := strconv.ParseFloat(strings.TrimSuffix(root.Width, "pt"), 64)
			h, errH := strconv.ParseFloat(strings.TrimSuffix(root.Height, "pt"), 64)
			if errW != nil || errH != nil || math.Abs(w-want.Points()) > 0.01 || math.Abs(h-chartH.Points()) > 0.01 {
				t.Errorf("chart is %s × %s, want %gpt × %gpt", root.Width, root.Height, want.Points(), chartH.Points())
			}
		})
	}
	if _, err := ledgerChart(Ledger{}); err == nil {
		t.Error("a ledger with no hops drew a chart; want an error")
	}
}

func TestCutOffByDemo(t *testing.T) {
	t.Parallel()
	for _, p := range syntheticScenario().Patterns {
		if got, want := cutOffByDemo(p), p.Key == "none"; got != want {
			t.Errorf("%s: cutOffByDemo = %v, want %v", p.Key, got, want)
		}
		if got, want := failuresCutOffByDemo(p), p.Key == "none"; got != want {
			t.Errorf("%s: failuresCutOffByDemo = %v, want %v", p.Key, got, want)
		}
	}
	// Some answered, the rest were cut off: the failures' cost is the cut-off.
	partly := Pattern{Requests: 10, CutOff: 8, FailedRatio: 0.8, FailureReasons: map[string]int{"cut-off": 8}}
	if cutOffByDemo(partly) || !failuresCutOffByDemo(partly) {
		t.Error("a pattern with 8 of 10 requests cut off: want its failures, not its latency, marked as the demo's cut-off")
	}
	mixed := Pattern{Requests: 10, CutOff: 2, FailedRatio: 0.5, FailureReasons: map[string]int{"cut-off": 2, "timeout": 3}}
	if failuresCutOffByDemo(mixed) {
		t.Error("failures partly measured were marked as the demo's cut-off")
	}
}

// TestChartsOneStyle checks the demo's charts against the style it shares
// with budget sim's: the latency series are not in an outcome's colour, and
// the outcome and goodput axes stop at 100 %.
func TestChartsOneStyle(t *testing.T) {
	t.Parallel()
	s := syntheticScenario()
	lat, err := latencyChart(s, 300)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{chart.Hex(chart.InBudget), chart.Hex(chart.Late), chart.Hex(chart.Failed)} {
		if strings.Contains(string(lat.SVG), "fill:"+c) {
			t.Errorf("the latency chart fills a series with the outcome colour %s", c)
		}
	}
	out, err := outcomeChart(s)
	if err != nil {
		t.Fatal(err)
	}
	good, err := goodputChart(&Overload{Variants: []Variant{{Name: "budget", Goodput: 1}, {Name: "none", Goodput: 0.33}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []drawn{out, good} {
		if !strings.Contains(string(c.SVG), ">100<") {
			t.Errorf("%s: no 100 %% tick", c.Key)
		}
		for _, tick := range []string{">110<", ">120<", ">125<", ">140<"} {
			if strings.Contains(string(c.SVG), tick) {
				t.Errorf("%s: the share axis goes past 100 %% (tick %s)", c.Key, tick)
			}
		}
	}
}
