package sim

import (
	"image/color"
	"strings"
	"testing"

	"github.com/timebudget/budget/cmd/budget/internal/chart"
)

// fabricated is a report of four patterns with figures of the magnitudes
// the issue quotes: wasted work of 1,327 s beside 44,415 s.
func fabricated() *Report {
	q := func(p50, p99 float64) Quantiles { return Quantiles{P50: p50, P99: p99} }
	return &Report{File: "shop.yaml", Entry: "edge", BudgetMs: 300, Services: 5, Requests: 1000, GiveUpMs: 900,
		Results: []Result{
			{Pattern: "per-call", Name: "per-call timeouts", Requests: 1000, InBudget: 0.2, Late: 0.7, Failed: 0.1, LatencyMs: q(450, 890), FailureLatencyMs: q(700, 900), WastedWorkSeconds: 44415},
			{Pattern: "shared", Name: "shared deadline", Requests: 1000, InBudget: 0.6, Failed: 0.4, LatencyMs: q(250, 300), FailureLatencyMs: q(300, 300), WastedWorkSeconds: 1327},
			{Pattern: "admission", Name: "deadline + admission", Requests: 1000, InBudget: 0.85, Late: 0.001, Failed: 0.149, LatencyMs: q(40, 300), FailureLatencyMs: q(1, 3), WastedWorkSeconds: 0.4},
			{Pattern: "none", Name: "no timeout", Requests: 1000, InBudget: 0.1, Late: 0.3, Failed: 0.6, LatencyMs: q(900, 900), FailureLatencyMs: q(900, 900), WastedWorkSeconds: 30000},
		}}
}

// TestChartsOneStyle checks the report's charts against the style every
// report of the command shares: a share axis that stops at 100 %, series
// coloured apart from the outcomes (the red of "failed" is no p50), and a
// log scale for wasted work, where 1,327 s and 44,415 s both stand out.
func TestChartsOneStyle(t *testing.T) {
	t.Parallel()
	r := fabricated()
	out, err := outcomeChart(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, tick := range []string{">110<", ">120<", ">125<", ">130<"} {
		if strings.Contains(string(out.SVG), tick) {
			t.Errorf("the outcome chart's axis goes past 100 %% (tick %s)", tick)
		}
	}
	if !strings.Contains(string(out.SVG), ">100<") || !strings.Contains(string(out.SVG), "fill:"+chart.Hex(chart.Failed)) {
		t.Error("the outcome chart has no 100 % tick or no failed bars")
	}
	lat, err := latencyChart(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []color.Color{chart.InBudget, chart.Late, chart.Failed} {
		if strings.Contains(string(lat.SVG), "fill:"+chart.Hex(c)) {
			t.Errorf("the latency chart fills a series with the outcome colour %s", chart.Hex(c))
		}
	}
	for i := range 3 {
		if !strings.Contains(string(lat.SVG), "fill:"+chart.Hex(chart.Series(i))) {
			t.Errorf("the latency chart lacks series colour %d", i)
		}
	}
	waste, err := wasteChart(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">1327s<", ">44415s<", ">400ms<", "log scale", ">1000s<"} {
		if !strings.Contains(string(waste.SVG)+waste.Title, want) {
			t.Errorf("the wasted-work chart lacks %q", want)
		}
	}
}

// TestPageFromEmbeddedTemplate renders the whole page: the template is the
// embedded report.html.tmpl, figures are written by package format, and
// the key names the outcome colours.
func TestPageFromEmbeddedTemplate(t *testing.T) {
	t.Parallel()
	page, err := fabricated().RenderHTML()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!doctype html>", `<div class="table"><table class="patterns">`, "44415s", "&lt;1%", "85%",
		"background:" + chart.Hex(chart.Failed), `<svg role="img"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(string(page), `<svg role="img"`); n != 3 {
		t.Errorf("%d charts, want 3", n)
	}
	if !strings.HasPrefix(pageHTML, "<!doctype html>") {
		t.Error("the page's template is not the embedded report.html.tmpl")
	}
}
