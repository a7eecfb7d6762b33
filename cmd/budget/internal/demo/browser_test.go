package demo

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/timebudget/budget/cmd/budget/internal/browsertest"
	"github.com/timebudget/budget/cmd/budget/internal/format"
	"github.com/timebudget/budget/cmd/budget/internal/overload"
	"github.com/timebudget/budget/cmd/budget/internal/report"
)

// TestReportRendersInChromium opens report.html in headless Chromium, as a
// person would, and checks what the page shows: the outcome and wasted-work
// charts of every scenario, drawn at a visible size, and every figure on the
// page equal to the same figure in report.json, and the first scenario's
// table within the first screen of a 1280×800 window. Screenshots of that
// first screen and of the full page are kept as demo-report-first-screen.png
// and demo-report.png (see browsertest.ArtifactDir).
func TestReportRendersInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	rep, dir := smallRun(t)
	url := "file://" + filepath.Join(dir, "report.html")

	dom, err := browsertest.Run(t, bin, 1200, 2000, "--dump-dom", url)
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, dom)
	}
	page := string(dom)
	if !strings.Contains(page, `data-rendered="yes"`) {
		t.Fatal("the page's load handler did not run; the dump is not of a rendered page")
	}
	checkRows(t, page, rep)
	checkCharts(t, page, rep)
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkFigures(t, page, raw)

	// The first screen of a 1280×800 window shows what budget is, the
	// verdict and the first scenario's table, the most telling one.
	first, err := browsertest.Run(t, bin, 1280, 800, "--dump-dom", url)
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, first)
	}
	m := regexp.MustCompile(`data-first-table-bottom="(\d+)"`).FindStringSubmatch(string(first))
	if m == nil {
		t.Error("the page did not record where its first table ends")
	} else if bottom, _ := strconv.Atoi(m[1]); bottom > 800 {
		t.Errorf("the first scenario's table ends %d px down, below the first screen of a 1280×800 window", bottom)
	}
	browsertest.Screenshot(t, bin, url, "demo-report-first-screen.png", 1280, 800)

	height := 4000
	if m := regexp.MustCompile(`data-height="(\d+)"`).FindStringSubmatch(page); m != nil {
		height, _ = strconv.Atoi(m[1])
	}
	height = min(max(height, 1000), 20000)
	browsertest.Screenshot(t, bin, url, "demo-report.png", 1280, height)
}

// checkRows checks that every pattern and overload variant has its row.
func checkRows(t *testing.T, page string, rep *report.Report) {
	t.Helper()
	for _, s := range rep.Scenarios {
		for _, p := range s.Patterns {
			row := regexp.MustCompile(`(?s)<section class="scenario" id="scenario-` + s.Name + `">.*?<tr data-pattern="` + regexp.QuoteMeta(p.Key) + `">`)
			if !row.MatchString(page) {
				t.Errorf("no table row for %s, %s", s.Name, p.Name)
			}
		}
	}
	if n := strings.Count(page, `<tr data-variant=`); n != len(overload.Variants) {
		t.Errorf("%d overload rows, want %d", n, len(overload.Variants))
	}
}

// checkCharts checks that the page leads each scenario with its outcome and
// failure-cost charts, has the wasted-work and latency charts, and that
// every chart was decoded and drawn at a visible size.
func checkCharts(t *testing.T, page string, rep *report.Report) {
	t.Helper()
	imgs := regexp.MustCompile(`<img [^>]*class="chart[^"]*"[^>]*>`).FindAllString(page, -1)
	keys := map[string]string{}
	var order []string
	for _, img := range imgs {
		m := regexp.MustCompile(`data-chart="([^"]+)"`).FindStringSubmatch(img)
		if m == nil {
			t.Errorf("a chart has no data-chart: %.120s", img)
			continue
		}
		keys[m[1]] = img
		order = append(order, m[1])
	}
	var want []string
	for _, s := range rep.Scenarios {
		want = append(want, "outcomes-"+s.Name, "failure-cost-"+s.Name, "wasted-"+s.Name, "latency-"+s.Name)
	}
	want = append(want, "goodput", "held-late")
	for _, l := range rep.Ledgers {
		want = append(want, fmt.Sprintf("ledger-%s-%d", l.Scenario, l.Request))
	}
	if !slices.Equal(order, want) {
		t.Errorf("charts on the page, in order:\n%v\nwant\n%v", order, want)
	}
	attr := func(tag, name string) int {
		m := regexp.MustCompile(name + `="(\d+)`).FindStringSubmatch(tag)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	for key, img := range keys {
		w, h := attr(img, "data-rendered-width"), attr(img, "data-rendered-height")
		if w < 300 || h < 150 {
			t.Errorf("chart %s was drawn %dx%d, want a visible size", key, w, h)
		}
		if attr(img, "data-natural") == 0 {
			t.Errorf("chart %s's image did not decode", key)
		}
	}
	intro, verdict, scen := strings.Index(page, `class="intro"`), strings.Index(page, `id="verdict"`), strings.Index(page, `class="scenario"`)
	if intro < 0 || verdict < intro || scen < verdict {
		t.Error("the page does not open with what budget is, then the verdict, then the scenarios")
	}
	if !strings.Contains(page, `id="how"`) {
		t.Error(`the page has no "How to read this page"`)
	}
}

// figureTag matches an element the template tagged with a figure's path in
// report.json and its unit.
var figureTag = regexp.MustCompile(`(?s)<(span|td|li|pre|code)\b[^>]*?data-k="([^"]*)" data-unit="([^"]*)"[^>]*>(.*?)</(?:span|td|li|pre|code)>`)

// checkFigures checks every tagged figure on the page against report.json,
// formatted as the unit says, and that no table cell shows a number without
// a tag: every figure on the page comes from report.json.
func checkFigures(t *testing.T, page string, raw []byte) {
	t.Helper()
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	tags := figureTag.FindAllStringSubmatch(page, -1)
	if len(tags) < 100 {
		t.Fatalf("%d figures tagged on the page; the template lost its tags", len(tags))
	}
	for _, m := range tags {
		key, unit, shown := m[2], m[3], html.UnescapeString(m[4])
		v, err := lookup(doc, key)
		if err != nil {
			t.Errorf("%s: %v", key, err)
			continue
		}
		want, err := expectedText(unit, v)
		if err != nil {
			t.Errorf("%s: %v", key, err)
			continue
		}
		if shown != want {
			t.Errorf("%s: the page shows %q, report.json says %q", key, shown, want)
		}
	}
	digit := regexp.MustCompile(`\d`)
	for _, td := range regexp.MustCompile(`(?s)<td\b[^>]*>.*?</td>`).FindAllString(page, -1) {
		text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(td, "")
		if digit.MatchString(text) && !strings.Contains(td, "data-k=") {
			t.Errorf("a table cell shows a figure not tagged with its place in report.json: %.160s", td)
		}
	}
}

// lookup follows a dotted path of keys and indices through decoded JSON.
func lookup(doc any, path string) (any, error) {
	v := doc
	for part := range strings.SplitSeq(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[part]; !ok {
				return nil, fmt.Errorf("report.json has no %q", part)
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("report.json has no element %q", part)
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("report.json has no %q under a %T", part, v)
		}
	}
	return v, nil
}

// expectedText is how the page must show a figure of report.json.
func expectedText(unit string, v any) (string, error) {
	switch unit {
	case "text":
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("text figure is a %T", v)
		}
		return s, nil
	case "failure-cost", "db-p50", "db-p99", "db-max", "db-total":
		raw, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		if unit == "failure-cost" {
			var p report.Pattern
			if err := json.Unmarshal(raw, &p); err != nil {
				return "", err
			}
			return report.FailureCost(p), nil
		}
		var d report.Database
		if err := json.Unmarshal(raw, &d); err != nil {
			return "", err
		}
		return report.DatabaseCell(&d, strings.TrimPrefix(unit, "db-")), nil
	case "counts", "failed":
		raw, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		if unit == "failed" {
			var p report.Pattern
			if err := json.Unmarshal(raw, &p); err != nil {
				return "", err
			}
			return report.FailedAt(p), nil
		}
		var m map[string]int
		if err := json.Unmarshal(raw, &m); err != nil {
			return "", err
		}
		return format.Counts(m), nil
	}
	return report.FormatFigure(unit, v)
}
