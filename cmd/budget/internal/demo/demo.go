package demo

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/format"
	"github.com/timebudget/budget/cmd/budget/internal/overload"
	"github.com/timebudget/budget/cmd/budget/internal/pattern"
	"github.com/timebudget/budget/cmd/budget/internal/postgres"
	"github.com/timebudget/budget/cmd/budget/internal/progress"
	"github.com/timebudget/budget/cmd/budget/internal/report"
	"github.com/timebudget/budget/cmd/budget/internal/scenario"
	"github.com/timebudget/budget/httpbudget"
)

// Run runs every configured scenario and pattern, reporting progress to
// progressW, and returns the measurements.
func Run(ctx context.Context, cfg *demoConfig, progressW io.Writer) (*report.Report, error) {
	parts := 0
	for _, sc := range scenario.All {
		if cfg.Has(sc.Key) {
			parts += len(pattern.All)
		}
	}
	if cfg.Has("overload") {
		parts += len(overload.Variants)
	}
	prog := progress.New(progressW, parts)
	start := time.Now()
	var all []scenarioRuns
	for _, sc := range scenario.All {
		if !cfg.Has(sc.Key) {
			continue
		}
		sr := scenarioRuns{sc: sc}
		for _, pat := range pattern.All {
			r, err := runPattern(ctx, cfg, sc, pat, prog)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", sc.Key, pat.Name, err)
			}
			sr.runs = append(sr.runs, r)
		}
		all = append(all, sr)
	}
	var over []*overload.Result
	if cfg.Has("overload") {
		for _, v := range overload.Variants {
			r, err := overload.Run(ctx, cfg.overload, v, prog)
			if err != nil {
				return nil, fmt.Errorf("overload, %s: %w", v.Name, err)
			}
			over = append(over, r)
		}
	}
	prog.Finish()
	return buildReport(cfg, all, over, time.Since(start)), nil
}

// buildReport gathers every scenario's and the overload case's runs into
// the one report the table, report.json and report.html are rendered from,
// so the three always agree.
func buildReport(cfg *demoConfig, all []scenarioRuns, over []*overload.Result, wall time.Duration) *report.Report {
	rep := &report.Report{
		Version:     1,
		GeneratedAt: time.Now().UTC().Format(time.RFC3339),
		Config: report.Config{
			BudgetMs: format.Millis(cfg.Budget), Requests: cfg.requests, Concurrency: cfg.concurrency,
			Fault: scenario.FormatFaults(cfg.Faults), Scenarios: cfg.Scenarios,
			SafetyLimitMs: format.Millis(pattern.SafetyLimit(cfg.Budget)), WallSeconds: format.Round3(wall.Seconds()),
		},
	}
	for _, sr := range all {
		s := report.Scenario{
			Name: sr.sc.Key, Title: sr.sc.Title, Story: sr.sc.Story,
			PerCallTimeoutMs: format.Millis(sr.sc.PerCall(cfg.Budget)), PerCallRule: sr.sc.PerCallRule,
		}
		for _, d := range sr.sc.Deps {
			s.Dependencies = append(s.Dependencies, report.Dependency{
				Name: d.Name, Protocol: d.Proto.String(), TypMs: format.Millis(d.Base), Cascade: d.Cascade,
				Fault: cfg.Faults[d.Name].String(), FaultMeans: cfg.Faults[d.Name].Describe(),
			})
		}
		for _, r := range sr.runs {
			s.Patterns = append(s.Patterns, newPatternReport(cfg, r))
		}
		if sr.sc.HasDep(postgres.Dependency) {
			s.Database = databaseNote(cfg)
		}
		s.Narrative = report.Narrate(s)
		rep.Scenarios = append(rep.Scenarios, s)
	}
	if len(over) > 0 {
		rep.Overload = overload.NewReport(cfg.overload, over)
	}
	rep.Ledgers = sampleLedgers(all)
	rep.Notes = reportNotes(cfg, rep)
	rep.Verdict = report.Verdict(rep)
	return rep
}

// reportNotes says what was scaled and how the figures were measured.
func reportNotes(cfg *demoConfig, rep *report.Report) []string {
	notes := []string{
		fmt.Sprintf("Times are scaled down so the run is short: the budget is %s where real services use 1–3 s, and the dependencies answer in 15–80 ms.", cfg.Budget),
		"Latency is the time to answer or fail as the user saw it. \"In budget\" counts answers that arrived within the budget; \"late\" ones arrived after the user had stopped waiting.",
		fmt.Sprintf("No timeout: the demo's load generator cuts each request off at its safety limit of %s (%d× the budget); those requests are counted as cut off.", pattern.SafetyLimit(cfg.Budget), pattern.SafetyFactor),
		"Wasted work is measured by each dependency: how long its work went on after its caller had gone (canceled, connection closed, or deadline passed). resolve, retrieve, inventory and pricing run their work in the request's context and stop at once; geometry and payment hand it to an engine that does not see cancellation, only a deadline handed over at the start, so there the budget headers make the difference. Work still running when a run ended is counted up to that moment, so these figures understate the waste of hung work.",
	}
	if o := rep.Overload; o != nil {
		notes = append(notes, fmt.Sprintf("Overload: times are %.1f× the case's full-size times of 50 ms → 5 s (the dependency slows from %s to %s, the user's budget is %s, the caller's own timeout %s, the service's per-call timeout %s); %d workers and %.0f requests/s, %.0f%% of them calling the slow dependency. Goodput is measured over the %s the dependency is slow; \"without budgets\" is the best variant without one.",
			o.Scale, format.Duration(o.DependencyFromMs), format.Duration(o.DependencyToMs), format.Duration(o.BudgetMs), format.Duration(o.UpstreamTimeoutMs), format.Duration(o.PerCallTimeoutMs),
			o.Workers, o.RatePerSecond, 100*o.SlowShare, format.Duration(o.MeasuredForMs)))
	}
	return notes
}

// ServeLivePage serves the run's /debug/budget page on loopback while the
// demo runs, so a person can watch the admission pattern's Ops (quantiles,
// suggested timeouts, admission state) and the waterfalls of refused and
// expired requests live, and prints its address. The returned function stops
// it. When no port can be had the demo runs without it.
func ServeLivePage(cfg *demoConfig, progressW io.Writer) func() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(progressW, "budget demo: no live page: %v\n", err)
		return func() {}
	}
	cfg.page = httpbudget.NewDebugPage()
	mux := http.NewServeMux()
	mux.Handle("/debug/budget", cfg.page)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(progressW, "live: http://%s/debug/budget (while the demo runs)\n", ln.Addr())
	return func() { _ = srv.Close() }
}

// databaseNote says whether the database hop ran and, if not, why and how
// to enable it.
func databaseNote(cfg *demoConfig) string {
	switch {
	case cfg.Postgres != "":
		return "database hop: " + postgres.Dependency + "'s work runs in PostgreSQL as SELECT pg_sleep(its time): through pgxbudget (statement_timeout from the budget) in the budget patterns; " +
			"plain pgx under the per-call timeout (pgx sends a cancel request when it ends); plain pgx with no deadline, not tied to the request, with no timeout. " +
			"The server's time after the caller left is sampled from pg_stat_activity every 5ms"
	case cfg.DBNote != "":
		return cfg.DBNote
	}
	return "database hop skipped: no PostgreSQL (set --postgres URL or " + postgres.Env + ")"
}
