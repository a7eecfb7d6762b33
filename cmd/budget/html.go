package main

import (
	"bytes"
	"encoding/base64"
	"html/template"
)

// renderHTML renders report.html: one self-contained file with inline CSS and
// the charts embedded as PNG data URLs, so it opens offline and can be mailed
// or attached to a ticket as it is.
func renderHTML(rep *report) ([]byte, error) {
	type scenarioView struct {
		scenarioReport
		Chart chart
	}
	view := struct {
		*report
		Scenarios []scenarioView
		Overload  *overloadReport
		Goodput   chart
		Ledgers   []chart
		Requests  []ledgerReport
	}{report: rep, Overload: rep.Overload, Requests: rep.Ledgers}
	for _, s := range rep.Scenarios {
		c, err := latencyChart(s, rep.Config.BudgetMs)
		if err != nil {
			return nil, err
		}
		view.Scenarios = append(view.Scenarios, scenarioView{scenarioReport: s, Chart: c})
	}
	if rep.Overload != nil {
		c, err := goodputChart(rep.Overload)
		if err != nil {
			return nil, err
		}
		view.Goodput = c
	}
	for _, l := range rep.Ledgers {
		c, err := ledgerChart(l)
		if err != nil {
			return nil, err
		}
		view.Ledgers = append(view.Ledgers, c)
	}
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, view); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms":     fmtMs,
	"pct":    pct,
	"counts": counts,
	"failed": failedAt,
	"dur":    msDur,
	"mulPct": func(x float64) float64 { return 100 * x },
	"png": func(b []byte) template.URL {
		return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))
	},
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>budget demo report</title>
<style>
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2733; margin: 2rem auto; max-width: 1100px; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #d5dde6; padding-bottom: .2rem; }
.sub { color: #556; margin-top: 0; }
table { border-collapse: collapse; margin: .8rem 0 1.2rem; font-size: 13.5px; width: 100%; }
th, td { border-bottom: 1px solid #e3e8ee; padding: .3rem .5rem; text-align: right; vertical-align: top; }
th { background: #f3f6f9; font-weight: 600; }
td.l, th.l { text-align: left; }
tr.budget td { background: #f4fbf4; }
img.chart { display: block; max-width: 100%; height: auto; margin: .6rem 0; border: 1px solid #e3e8ee; }
pre { background: #f6f8fa; padding: .8rem; overflow-x: auto; font-size: 12.5px; }
ul.notes li { margin: .3rem 0; }
.deps { font-size: 13.5px; color: #334; }
</style>
</head>
<body>
<h1>budget demo</h1>
<p class="sub">Budget {{dur .Config.BudgetMs}} · {{.Config.Requests}} requests per pattern, {{.Config.Concurrency}} at a time · faults: {{.Config.Fault}} · run took {{printf "%.1f" .Config.WallSeconds}} s · {{.GeneratedAt}}</p>
<p>Real services on 127.0.0.1, the same traffic and the same faults for each pattern: per-call timeouts, one shared deadline, a shared deadline with admission, and no timeout at all.</p>
{{range .Scenarios}}
<section class="scenario" id="scenario-{{.Name}}">
<h2>{{.Name}}: {{.Title}}</h2>
<p class="deps">Dependencies: {{range $i, $d := .Dependencies}}{{if $i}}; {{end}}<b>{{$d.Name}}</b> ({{$d.Protocol}}, typically {{ms $d.TypMs}}, {{if $d.Cascade}}stops when its caller leaves{{else}}stops only at a deadline handed over{{end}}{{if ne $d.Fault "none"}}, fault: {{$d.Fault}}{{end}}){{end}}.
Per-call timeout {{ms .PerCallTimeoutMs}}: {{.PerCallRule}}.</p>
<img class="chart" src="{{png .Chart.PNG}}" alt="{{.Chart.Alt}}" title="{{.Chart.Title}}">
<table class="patterns">
<thead><tr><th class="l">pattern</th><th>p50</th><th>p99</th><th>max</th><th>in budget</th><th>late</th><th>failed</th><th class="l">answered by</th><th class="l">refused before starting</th><th class="l">failed at</th><th>wasted work</th></tr></thead>
<tbody>
{{range .Patterns}}<tr data-pattern="{{.Key}}">
<td class="l" title="{{.About}}">{{.Name}}</td><td>{{ms .LatencyMs.P50}}</td><td>{{ms .LatencyMs.P99}}</td><td>{{ms .LatencyMs.Max}}</td>
<td>{{pct .AnsweredRatio}}</td><td>{{pct .LateRatio}}</td><td>{{pct .FailedRatio}}</td>
<td class="l">{{counts .Rungs}}</td><td class="l">{{counts .RefusalsByStage}}</td><td class="l">{{failed .}}</td><td>{{ms .WastedWorkMs}}</td>
</tr>
{{end}}</tbody>
</table>
</section>
{{end}}
{{with .Overload}}
<section id="overload">
<h2>overload: a slow dependency under a {{.Workers}}-worker service</h2>
<p>The dependency slows from {{ms .DependencyFromMs}} to {{ms .DependencyToMs}} (the seeds' 50 ms → 5 s at {{printf "%.1f" .Scale}}×) while {{printf "%.0f" .RatePerSecond}} requests/s arrive, {{printf "%.0f" (mulPct .SlowShare)}}% of them calling it. The user's budget is {{ms .BudgetMs}}; without budgets the caller's own timeout is {{ms .UpstreamTimeoutMs}} and the service's per-call timeout {{ms .PerCallTimeoutMs}}. Goodput: the other requests answered within the budget while the dependency was slow.</p>
<img class="chart" src="{{png $.Goodput.PNG}}" alt="{{$.Goodput.Alt}}" title="{{$.Goodput.Title}}">
<table class="overload">
<thead><tr><th class="l">variant</th><th>goodput of other requests</th><th>p99 of other requests</th><th>slow ones answered</th><th>worker time after the user left</th><th>refused before starting</th><th class="l">how the dependency is called</th></tr></thead>
<tbody>
{{range .Variants}}<tr data-variant="{{.Key}}"><td class="l">{{.Name}}</td><td>{{pct .Goodput}}</td><td>{{ms .OtherP99Ms}}</td><td>{{pct .SlowAnsweredRatio}}</td><td>{{printf "%.1f" .WorkerSecondsLate}} s</td><td>{{.RefusedBeforeStarting}}</td><td class="l">{{.About}}</td></tr>
{{end}}</tbody>
</table>
<p>Goodput with budgets <b>{{pct .Goodput.WithBudgets}}</b>, without <b>{{pct .Goodput.WithoutBudgets}}</b> (the best variant without a budget).</p>
</section>
{{end}}
{{if .Ledgers}}
<section id="ledger">
<h2>where one request's budget went</h2>
<p>The spend ledger of single requests of the admission pattern, as the edge recorded it.</p>
{{range $i, $c := .Ledgers}}<img class="chart" src="{{png $c.PNG}}" alt="{{$c.Alt}}" title="{{$c.Title}}">
{{end}}
{{range .Requests}}<p><b>{{.Scenario}}, request {{.Request}}</b>: {{.Label}}</p>
<pre>{{.Text}}</pre>
{{end}}
</section>
{{end}}
<h2>how to read this</h2>
<ul class="notes">
{{range .Notes}}<li>{{.}}</li>
{{end}}</ul>
<script>
// Record how large each chart was drawn, for automated checks of the page.
window.addEventListener('load', function () {
  document.querySelectorAll('img.chart').forEach(function (img) {
    var r = img.getBoundingClientRect();
    img.dataset.renderedWidth = Math.round(r.width);
    img.dataset.renderedHeight = Math.round(r.height);
    img.dataset.natural = img.naturalWidth + 'x' + img.naturalHeight;
  });
  document.body.dataset.rendered = 'yes';
});
</script>
</body>
</html>
`))
