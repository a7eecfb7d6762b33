package report

import (
	"bytes"
	_ "embed" // the report's template
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/timebudget/budget/cmd/budget/internal/chart"
	"github.com/timebudget/budget/cmd/budget/internal/format"
)

// reportHTML is the page's template. Every figure on the page is written by
// the fig function, which tags it with the path of the same figure in
// report.json (data-k) and how it is formatted (data-unit), so a test can
// check that the page and report.json agree figure by figure.
//
//go:embed report.html.tmpl
var reportHTML string

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"fig":          figure,
	"path":         jsonPath,
	"counts":       format.Counts[int],
	"failed":       FailedAt,
	"failureCost":  FailureCost,
	"dbCell":       DatabaseCell,
	"dbQuantities": func() []string { return DatabaseQuantities },
	"svg": func(b []byte) template.URL {
		return template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(b))
	},
}).Parse(reportHTML))

// scenarioView is a scenario with its charts, in the order the page shows
// them: how requests ended and what a failure cost first, then the wasted
// work, then latency.
type scenarioView struct {
	Scenario
	Charts []drawn
}

// reportView is what the template renders.
type reportView struct {
	*Report
	Scenarios []scenarioView
	Overload  *Overload
	Overloads []drawn
	Ledgers   []drawn
	Requests  []Ledger
	Colours   map[string]string
	// Intro and ReadmeURL open the page: what budget is, the four
	// patterns, and where to read more.
	Intro     string
	ReadmeURL string
}

// RenderHTML renders report.html: one self-contained file with inline CSS and
// the charts embedded as PNG data URLs, so it opens offline and can be mailed
// or attached to a ticket as it is.
func RenderHTML(rep *Report) ([]byte, error) {
	view, err := newReportView(rep)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, view); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// newReportView draws every chart of the report.
func newReportView(rep *Report) (*reportView, error) {
	view := &reportView{Report: rep, Overload: rep.Overload, Requests: rep.Ledgers, Intro: Intro, ReadmeURL: ReadmeURL, Colours: map[string]string{
		"in": chart.Hex(chart.InBudget), "late": chart.Hex(chart.Late), "failed": chart.Hex(chart.Failed),
	}}
	for _, s := range rep.Scenarios {
		sv := scenarioView{Scenario: s}
		for _, draw := range []func() (drawn, error){
			func() (drawn, error) { return outcomeChart(s) },
			func() (drawn, error) {
				return failureCostChart(s, rep.Config.BudgetMs, rep.Config.SafetyLimitMs)
			},
			func() (drawn, error) { return wastedChart(s) },
			func() (drawn, error) { return latencyChart(s, rep.Config.BudgetMs) },
		} {
			c, err := draw()
			if err != nil {
				return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
			}
			sv.Charts = append(sv.Charts, c)
		}
		view.Scenarios = append(view.Scenarios, sv)
	}
	if rep.Overload != nil {
		for _, draw := range []func(*Overload) (drawn, error){goodputChart, heldLateChart} {
			c, err := draw(rep.Overload)
			if err != nil {
				return nil, fmt.Errorf("overload: %w", err)
			}
			view.Overloads = append(view.Overloads, c)
		}
	}
	for _, l := range rep.Ledgers {
		c, err := ledgerChart(l)
		if err != nil {
			return nil, err
		}
		view.Ledgers = append(view.Ledgers, c)
	}
	return view, nil
}

// figure renders one figure of the report as a span tagged with its path in
// report.json and its unit. The units, and how each is shown:
//
//	ms     milliseconds, as fmtMs shows them (12ms, 2.10s)
//	dur    milliseconds, as a Go duration (300ms)
//	pct    a ratio, as a percentage (84%)
//	x      a factor (0.5×)
//	s1     seconds with one decimal (351.3 s)
//	int    a whole number
func figure(path, unit string, v any) (template.HTML, error) {
	text, err := FormatFigure(unit, v)
	if err != nil {
		return "", fmt.Errorf("figure %s: %w", path, err)
	}
	return template.HTML(`<span class="fig" data-k="` + template.HTMLEscapeString(path) + `" data-unit="` + unit + `">` +
		template.HTMLEscapeString(text) + `</span>`), nil
}

// FormatFigure formats a figure of the given unit; the browser test uses it
// to check the page against report.json.
func FormatFigure(unit string, v any) (string, error) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	default:
		return "", fmt.Errorf("a figure must be a number, not %T", v)
	}
	switch unit {
	case "ms":
		return format.Ms(f), nil
	case "dur":
		return format.Duration(f).String(), nil
	case "pct":
		return format.Pct(f), nil
	case "x":
		return strconv.FormatFloat(f, 'f', 1, 64) + "×", nil
	case "s1":
		return strconv.FormatFloat(f, 'f', 1, 64) + " s", nil
	case "int":
		return strconv.FormatFloat(f, 'f', 0, 64), nil
	}
	return "", fmt.Errorf("unknown unit %q", unit)
}

// jsonPath joins the parts of a path into report.json: keys and indices,
// separated by dots, such as scenarios.0.patterns.2.answered_ratio.
func jsonPath(parts ...any) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ".")
}

// WriteFiles writes report.json and report.html into dir and returns their
// paths.
func WriteFiles(dir string, rep *Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	jsonPath := filepath.Join(dir, "report.json")
	if err := os.WriteFile(jsonPath, append(js, '\n'), 0o644); err != nil {
		return nil, err
	}
	html, err := RenderHTML(rep)
	if err != nil {
		return nil, err
	}
	htmlPath := filepath.Join(dir, "report.html")
	if err := os.WriteFile(htmlPath, html, 0o644); err != nil {
		return nil, err
	}
	return []string{htmlPath, jsonPath}, nil
}
