package report

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/cmd/budget/internal/chart"
	"github.com/timebudget/budget/cmd/budget/internal/format"
)

func TestWriteWrapped(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 60)
	cases := []struct {
		name, text, first, rest string
		wantLines               int
	}{
		{"short", "one line", "· ", "  ", 1},
		{"long", long, "· ", "  ", 4},
		{"a word longer than the line", strings.Repeat("x", 150), "", "", 1},
		{"empty", "", "· ", "  ", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			writeWrapped(&b, tc.text, tc.first, tc.rest)
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if b.Len() == 0 {
				lines = nil
			}
			if len(lines) != tc.wantLines {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), tc.wantLines, b.String())
			}
			for i, l := range lines {
				prefix := tc.rest
				if i == 0 {
					prefix = tc.first
				}
				if !strings.HasPrefix(l, prefix) {
					t.Errorf("line %d %q does not start with %q", i, l, prefix)
				}
				if n := utf8.RuneCountInString(l); n > TermWidth && strings.Contains(l, " ") {
					t.Errorf("line %d has %d columns: %q", i, n, l)
				}
			}
			if got := strings.Join(strings.Fields(b.String()), " "); tc.text != "" && got != strings.Join(strings.Fields(tc.first+tc.text), " ") {
				t.Errorf("words lost or reordered: %q", got)
			}
		})
	}
}

// TestWriteLedgerOneLinePerEvent checks the terminal ledger: one line per
// event, a bar only for events that took time, within termWidth.
func TestWriteLedgerOneLinePerEvent(t *testing.T) {
	t.Parallel()
	start := time.Unix(1000, 0)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	l := Ledger{Budget: 300 * time.Millisecond, Start: start, Events: []budget.Event{
		{Kind: budget.EventArrival, Stage: "edge", At: at(0), Remaining: 300 * time.Millisecond},
		{Kind: budget.EventAttempt, Stage: "resolve", At: at(0), Duration: 15 * time.Millisecond, Remaining: 300 * time.Millisecond, Outcome: budget.OutcomeOK},
		{Kind: budget.EventRefuse, Stage: "geometry.exact", At: at(15), Remaining: 285 * time.Millisecond, Outcome: budget.OutcomeInsufficient},
		{Kind: budget.EventFallback, Stage: "geometry.simplified", At: at(15), Duration: 270 * time.Millisecond, Remaining: 285 * time.Millisecond, Outcome: budget.OutcomeExpired},
		{Kind: budget.EventFallback, Stage: "geometry.cache", At: at(285), Duration: time.Millisecond, Remaining: 15 * time.Millisecond, Outcome: budget.OutcomeOK},
		{Kind: budget.EventAttempt, Stage: "audit", At: at(286), Duration: 5 * time.Millisecond, Remaining: 14 * time.Millisecond, Outcome: budget.OutcomeRetrySuppressed},
	}}
	var b strings.Builder
	writeLedger(&b, l)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 1+len(l.Events) {
		t.Fatalf("%d lines for %d events:\n%s", len(lines), len(l.Events), b.String())
	}
	for i, ev := range l.Events {
		line := lines[i+1]
		if !strings.Contains(line, ev.Stage) || !strings.Contains(line, ev.Kind.String()) {
			t.Errorf("line %q does not name %s %s", line, ev.Kind, ev.Stage)
		}
		if hasBar := strings.Contains(line, "|"); hasBar != (ev.Duration > 0) {
			t.Errorf("line %q: bar %v, want one only for events that took time", line, hasBar)
		}
		if n := utf8.RuneCountInString(line); n > TermWidth {
			t.Errorf("%d columns: %q", n, line)
		}
	}
	if !strings.Contains(lines[4], "██████████████") {
		t.Errorf("a fallback of 270 of 300 ms should fill most of the bar: %q", lines[4])
	}
	// Every bar starts in the same column, whatever the outcome's length.
	col := -1
	for _, line := range lines[1:] {
		if i := strings.Index(line, "|"); i >= 0 {
			if col >= 0 && utf8.RuneCountInString(line[:i]) != col {
				t.Errorf("bars start in different columns:\n%s", b.String())
			}
			col = utf8.RuneCountInString(line[:i])
		}
	}
}

func TestFormatting(t *testing.T) {
	t.Parallel()
	cases := []struct{ got, want string }{
		{format.Ms(0.5), "0.5ms"}, {format.Ms(12.3), "12ms"}, {format.Ms(1500), "1.50s"}, {format.Ms(295000), "295s"},
		{format.Pct(0.845), "84%"}, {format.Pct(1), "100%"},
		{format.Counts(map[string]int{"cache": 3, "exact": 5, "a": 3}), "exact 5, a 3, cache 3"}, {format.Counts[int](nil), "—"},
		{FailedAt(Pattern{FailuresByStage: map[string]int{"geometry": 2}, FailureReasons: map[string]int{"timeout": 2}}), "geometry 2 (timeout 2)"},
		{twoLines("deadline + admission"), "deadline +\nadmission"}, {twoLines("no timeout"), "no\ntimeout"}, {twoLines("budget"), "budget"},
		{chart.DecadeLabel(0.1), "0.1ms"}, {chart.DecadeLabel(100), "100ms"}, {chart.DecadeLabel(10000), "10s"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
