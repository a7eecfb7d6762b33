package demo

import (
	"context"
	"encoding/json"
	"github.com/timebudget/budget/cmd/budget/internal/pattern"
	"github.com/timebudget/budget/cmd/budget/internal/postgres"
	"github.com/timebudget/budget/cmd/budget/internal/progress"
	"github.com/timebudget/budget/cmd/budget/internal/report"
	"github.com/timebudget/budget/cmd/budget/internal/scenario"
	"html"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParseTag(t *testing.T) {
	t.Parallel()
	const tag = "budget-demo-checkout-shared-1"
	tests := []struct {
		query string
		id    int64
		ok    bool
	}{
		{"SELECT pg_sleep($1) /* " + tag + ":17 */", 17, true},
		{"SELECT pg_sleep($1) /* " + tag + ":0 */", 0, true},
		{"SELECT pg_sleep($1) /* budget-demo-checkout-none-1:17 */", 0, false},
		{"SELECT pg_sleep($1) /* " + tag + ":x */", 0, false},
		{"SELECT pg_sleep($1) /* " + tag + ":17", 0, false},
		{"SELECT 1", 0, false},
	}
	for _, tt := range tests {
		id, ok := postgres.ParseTag(tt.query, tag)
		if id != tt.id || ok != tt.ok {
			t.Errorf("parseTag(%q) = %d, %v; want %d, %v", tt.query, id, ok, tt.id, tt.ok)
		}
	}
}

// TestDBTrackMeasuresTimeAfterCallerLeft replays what the hop and the
// sampler record and checks what is measured: for each statement whose
// caller gave up, the time from then until the sampler last saw the server
// executing it; nothing for answered statements.
func TestDBTrackMeasuresTimeAfterCallerLeft(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type ev struct {
		kind string // start, left, answer, seen
		ids  []int64
		at   int
	}
	tests := []struct {
		name      string
		events    []ev
		wantAfter []time.Duration
		answered  int
		ranOn     int
	}{
		{
			name: "server stopped before the caller left",
			events: []ev{
				{"start", []int64{1}, 0}, {"seen", []int64{1}, 5}, {"seen", []int64{1}, 95}, {"left", []int64{1}, 100},
			},
			wantAfter: []time.Duration{0},
		},
		{
			name: "server ran on after the caller left",
			events: []ev{
				{"start", []int64{1, 2}, 0}, {"seen", []int64{1, 2}, 50}, {"left", []int64{1}, 100},
				{"seen", []int64{1, 2}, 300}, {"left", []int64{2}, 250}, {"seen", []int64{1}, 700},
			},
			wantAfter: []time.Duration{50 * time.Millisecond, 600 * time.Millisecond},
			ranOn:     2,
		},
		{
			name: "answered statements are not counted",
			events: []ev{
				{"start", []int64{1, 2}, 0}, {"seen", []int64{1, 2}, 10}, {"answer", []int64{1}, 20},
				{"left", []int64{2}, 30}, {"seen", []int64{2}, 40},
			},
			wantAfter: []time.Duration{10 * time.Millisecond},
			answered:  1, ranOn: 1,
		},
		{
			name: "a statement never seen active, and a stray id",
			events: []ev{
				{"start", []int64{1}, 0}, {"seen", []int64{9}, 5}, {"left", []int64{1}, 10}, {"left", []int64{9}, 10},
			},
			wantAfter: []time.Duration{0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := postgres.NewTrack()
			starts := 0
			for _, e := range tt.events {
				switch e.kind {
				case "start":
					for _, id := range e.ids {
						tr.Start(id)
						starts++
					}
				case "left", "answer":
					for _, id := range e.ids {
						tr.End(id, at(e.at), e.kind == "answer")
					}
				case "seen":
					tr.Seen(e.ids, at(e.at))
				}
			}
			m := tr.Measure()
			if !slices.Equal(m.AfterLeft, tt.wantAfter) {
				t.Errorf("after the caller left: %v, want %v", m.AfterLeft, tt.wantAfter)
			}
			var sum time.Duration
			for _, d := range tt.wantAfter {
				sum += d
			}
			if m.Statements != starts || m.Answered != tt.answered || m.RanOn() != tt.ranOn || m.Total() != sum {
				t.Errorf("statements %d answered %d ran on %d total %v; want %d, %d, %d, %v",
					m.Statements, m.Answered, m.RanOn(), m.Total(), starts, tt.answered, tt.ranOn, sum)
			}
		})
	}
}

func TestResolvePostgres(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, flag, env string
		wantURL         string
		whyHas          string
	}{
		{"flag", "postgres://db/x", "postgres://env/y", "postgres://db/x", ""},
		{"off", "off", "postgres://env/y", "", "--postgres off"},
		{"nothing", "", "", "", "set --postgres URL or BUDGET_TEST_POSTGRES"},
		{"unreachable", "", "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=1", "", "BUDGET_TEST_POSTGRES is set but PostgreSQL did not answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url, why := postgres.Resolve(context.Background(), tt.flag, tt.env)
			if url != tt.wantURL || !strings.Contains(why, tt.whyHas) || (url == "") == (why == "") {
				t.Errorf("resolvePostgres(%q, %q) = %q, %q; want %q and a reason containing %q", tt.flag, tt.env, url, why, tt.wantURL, tt.whyHas)
			}
		})
	}
}

// postgresURL returns the test database's URL, skipping the test outside CI
// when it is not set and failing it in CI.
func postgresURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv(postgres.Env)
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI must run the database hop against PostgreSQL", postgres.Env)
		}
		t.Skipf("set %s (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the database hop", postgres.Env)
	}
	return url
}

// TestDatabaseHopAgainstPostgres runs the checkout scenario with its payment
// work in PostgreSQL under every pattern and checks the story the report
// tells: with a budget the server stops the statement when the caller's time
// runs out; without one it goes on long after the caller left.
func TestDatabaseHopAgainstPostgres(t *testing.T) {
	t.Parallel()
	url := postgresURL(t)
	cfg, err := ParseFlags([]string{"--budget", "200ms", "--requests", "20", "--concurrency", "10",
		"--fault", "payment=slow:1s", "--scenario", "checkout", "--postgres", url})
	if err != nil {
		t.Fatal(err)
	}
	var sr scenarioRuns
	sr.sc = &scenario.Checkout
	for _, pat := range pattern.All {
		r, err := runPattern(context.Background(), cfg, &scenario.Checkout, pat, progress.New(&lockedBuffer{}, len(pattern.All)))
		if err != nil {
			t.Fatalf("%s: %v", pat.Name, err)
		}
		sr.runs = append(sr.runs, r)
	}
	rep := buildReport(cfg, []scenarioRuns{sr}, nil, time.Second)
	s := rep.Scenarios[0]
	if !strings.HasPrefix(s.Database, "database hop: payment's work runs in PostgreSQL") {
		t.Errorf("database note %q", s.Database)
	}
	var none *report.Database
	for _, p := range s.Patterns {
		if p.Key == "none" {
			none = p.Database
		}
	}
	if none == nil || none.CallerLeft == 0 || none.AfterCallerLeftMs.Max < 200 {
		t.Fatalf("no timeout: the server should run on long after its callers left (%+v)", none)
	}
	for _, p := range s.Patterns {
		d := p.Database
		if d == nil {
			t.Fatalf("%s: no database figures", p.Name)
		}
		t.Logf("%s: %d statements, %d answered, caller left %d, ran on %d; after the caller left p50 %.0fms p99 %.0fms max %.0fms",
			p.Name, d.Statements, d.Answered, d.CallerLeft, d.RanOn, d.AfterCallerLeftMs.P50, d.AfterCallerLeftMs.P99, d.AfterCallerLeftMs.Max)
		if p.DependencyCalls[postgres.Dependency] != int64(d.Statements) || p.WastedWorkByDependencyMs[postgres.Dependency] != d.TotalAfterCallerLeftMs {
			t.Errorf("%s: payment's row (%d calls, %.1fms wasted) does not show the database's figures",
				p.Name, p.DependencyCalls[postgres.Dependency], p.WastedWorkByDependencyMs[postgres.Dependency])
		}
		switch p.Key {
		case "shared", "admission":
			// The server's own statement_timeout stops the statement near
			// the deadline: a small part of what runs on without it, in the
			// same run (on a quiet machine under 50 ms against about 800).
			// How small depends on how busy the machine and the sampler are.
			if d.AfterCallerLeftMs.P99 > 50 && d.AfterCallerLeftMs.P99 > none.AfterCallerLeftMs.P50/4 {
				t.Errorf("%s: the server ran on %.0fms (p99) after the caller left, against %.0fms (p50) without a timeout; statement_timeout should stop it",
					p.Name, d.AfterCallerLeftMs.P99, none.AfterCallerLeftMs.P50)
			}
		case "per-call":
			// pgx sends a cancel request when the context ends: the server
			// runs on for as long as that takes, which depends on the load.
			if d.CallerLeft == 0 {
				t.Errorf("%s: no caller left before its answer", p.Name)
			}
		}
		// Admission may refuse every statement once it has learned that
		// payment takes longer than the budget (sooner on a busy machine,
		// where the hops before it leave less time): that is its job. Every
		// other pattern sends each request's statement.
		if d.Statements == 0 && p.Key != "admission" {
			t.Errorf("%s sent no statement", p.Name)
		}
	}
}

// TestDatabaseFiguresShown renders a report with the database hop's figures
// (copied from a small run, with figures set by hand, so no database is
// needed): the terminal shows them within 100 columns, and every one of them
// on the page is tagged with its place in report.json and equal to it.
func TestDatabaseFiguresShown(t *testing.T) {
	t.Parallel()
	small, _ := smallRun(t)
	var out strings.Builder
	report.WriteTable(&out, small)
	if !strings.Contains(out.String(), "database hop skipped: no PostgreSQL (set --postgres URL or BUDGET_TEST_POSTGRES)") {
		t.Errorf("a run without a database does not say the hop was skipped and how to enable it:\n%s", out.String())
	}

	rep := *small
	rep.Scenarios = slices.Clone(small.Scenarios)
	var s *report.Scenario
	for i := range rep.Scenarios {
		if rep.Scenarios[i].Name == scenario.Checkout.Key {
			s = &rep.Scenarios[i]
		}
	}
	if s == nil {
		t.Fatal("the small run has no checkout scenario")
	}
	s.Patterns = slices.Clone(s.Patterns)
	s.Database = databaseNote(&demoConfig{Postgres: "postgres://db/x"})
	for i := range s.Patterns {
		s.Patterns[i].Database = &report.Database{
			Statements: 120 + i, Answered: 20, CallerLeft: 100 - i, RanOn: 7 * i,
			AfterCallerLeftMs:      report.Latency{P50: 1.5 * float64(i), P99: 712.25 + float64(i), Max: 1234.5},
			TotalAfterCallerLeftMs: 81234.5 + float64(i),
		}
	}
	out.Reset()
	report.WriteTable(&out, &rep)
	for line := range strings.Lines(out.String()) {
		if n := utf8.RuneCountInString(strings.TrimSuffix(line, "\n")); n > report.TermWidth {
			t.Errorf("%d columns: %s", n, line)
		}
	}
	for _, want := range []string{"statements  caller left  ran on    p50    p99    max  total", "no timeout", "81s", "712ms", "1.23s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table does not show %q:\n%s", want, out.String())
		}
	}

	page, err := report.RenderHTML(&rep)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(&rep)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), "data-db-pattern="); n != len(pattern.All) {
		t.Errorf("%d rows of database figures on the page, want %d", n, len(pattern.All))
	}
	if !strings.Contains(string(page), `data-k="scenarios.1.patterns.3.database" data-unit="db-p99"`) {
		t.Error("the page does not tag the database figures with their place in report.json")
	}
	// The browser test reads the page as the browser parsed it; here the
	// template's character references are decoded the same way.
	checkFigures(t, html.UnescapeString(string(page)), raw)
}
