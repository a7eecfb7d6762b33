package report

import (
	"regexp"
	"strings"
	"testing"
)

// checkoutTie is checkout as a run measured it: payment slows down for
// good, and every pattern answers the same 17 % within the budget; what
// differs is what a failure cost.
func checkoutTie() Scenario {
	p := func(name, key string, cost float64, cutOff int) Pattern {
		reasons := map[string]int{"timeout": 100}
		if cutOff > 0 {
			reasons = map[string]int{"cut-off": cutOff}
		}
		return Pattern{Name: name, Key: key, Requests: 120, AnsweredRatio: 0.1667, FailedRatio: 0.8333,
			FailureCostMs: cost, CutOff: cutOff, FailureReasons: reasons, WastedWorkMs: cost * 10}
	}
	return Scenario{Name: "checkout", Patterns: []Pattern{
		p("per-call timeouts", "per-call", 353, 0),
		p("shared deadline", "shared", 290, 0),
		p("deadline + admission", "admission", 55, 0),
		p("no timeout", "none", 900, 100),
	}}
}

// TestNarrativeNarratesATieAsATie is the regression test for checkout's
// narrative naming "per-call timeouts, 17 %" the pattern with the most
// answers within the budget, where all four answered 17 %: a tie names no
// winner, and what sets the patterns apart is said instead.
func TestNarrativeNarratesATieAsATie(t *testing.T) {
	t.Parallel()
	s := checkoutTie()
	got := strings.Join(Narrate(s), "\n")
	if strings.Contains(got, "Most answers within the budget") {
		t.Errorf("the narrative of a tie names a winner:\n%s", got)
	}
	for _, want := range []string{"A tie: every pattern answered 17% of requests within the budget.",
		"deadline + admission failed after 55ms (the median), against 353ms for per-call timeouts"} {
		if !strings.Contains(got, want) {
			t.Errorf("narrative lacks %q:\n%s", want, got)
		}
	}
	v := scenarioVerdict(s)
	if !strings.HasPrefix(v, "checkout: a tie, every pattern answered 17%") || !strings.Contains(v, "55ms with deadline + admission") {
		t.Errorf("verdict of a tie: %q", v)
	}
	// Two of four tied at the top: both named, neither alone.
	s.Patterns[0].AnsweredRatio, s.Patterns[1].AnsweredRatio = 0.5, 0.5
	got = strings.Join(Narrate(s), "\n")
	if !strings.Contains(got, "a tie between per-call timeouts and shared deadline, 50% of requests each") {
		t.Errorf("narrative of a two-way tie:\n%s", got)
	}
	if v := scenarioVerdict(s); !strings.Contains(v, "per-call timeouts and shared deadline answered 50%") {
		t.Errorf("verdict of a two-way tie: %q", v)
	}
}

// TestVerdictComparesWithTheOthers checks the verdict of a scenario with
// one winner: its share against the others' range, from the figures.
func TestVerdictComparesWithTheOthers(t *testing.T) {
	t.Parallel()
	v := Verdict(&Report{Scenarios: []Scenario{syntheticScenario()}, Overload: &Overload{
		Goodput: Goodput{WithBudgets: 1, WithoutBudgets: 0.96},
		Variants: []Variant{{Name: "no timeout", Key: "none", Goodput: 0.33}, {Name: "failsafe-go", Key: "failsafe", Goodput: 0.96},
			{Name: "budget", Key: "budget", Goodput: 1}},
	}})
	want := []string{
		"geo: deadline + admission answered 100% of requests within the budget, against 0% for the others; least work wasted: deadline + admission, 0.0ms against 295s for per-call timeouts.",
		"overload: with budgets, 100% of the requests that never call the slow dependency were answered within the budget, against 96% at best without (failsafe-go).",
	}
	if strings.Join(v, "\n") != strings.Join(want, "\n") {
		t.Errorf("verdict:\n%s\nwant\n%s", strings.Join(v, "\n"), strings.Join(want, "\n"))
	}
}

// TestNoDataCellsReadTheSameEverywhere is the regression test for the page
// showing "0.0ms" under "a failure took" for a pattern where nothing
// failed, while the terminal showed "—": both show NoData, and a pattern
// that failed shows its median.
func TestNoDataCellsReadTheSameEverywhere(t *testing.T) {
	t.Parallel()
	s := syntheticScenario()
	s.Database = "database hop"
	s.Patterns[2].Database = &Database{Statements: 60, Answered: 60}
	rep := &Report{Scenarios: []Scenario{s}}
	page, err := RenderHTML(rep)
	if err != nil {
		t.Fatal(err)
	}
	var term strings.Builder
	WriteTable(&term, rep)
	cells := func(row string) []string {
		var out []string
		for _, td := range regexp.MustCompile(`(?s)<td\b[^>]*>(.*?)</td>`).FindAllStringSubmatch(row, -1) {
			out = append(out, regexp.MustCompile(`<[^>]*>`).ReplaceAllString(td[1], ""))
		}
		return out
	}
	for _, tc := range []struct{ key, name, cost string }{
		{"per-call", "per-call timeouts", NoData}, // answered late, none failed
		{"admission", "deadline + admission", NoData},
		{"shared", "shared deadline", "303ms"},
		{"none", "no timeout", "cut off"},
	} {
		row := regexp.MustCompile(`(?s)<tr data-pattern="` + tc.key + `">.*?</tr>`).FindString(string(page))
		c := cells(row)
		if len(c) < 5 || c[4] != tc.cost {
			t.Errorf("%s: the page's \"a failure took\" cell is %q, want %q (cells %q)", tc.key, c[min(4, len(c)-1)], tc.cost, c)
		}
		line := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(tc.name) + ` .*$`).FindString(term.String())
		if f := strings.Fields(strings.TrimPrefix(line, "  "+tc.name)); len(f) < 4 || strings.Join(f[3:len(f)-4], " ") != tc.cost {
			t.Errorf("%s: the terminal's row %q, want %q under \"a failure took\"", tc.key, line, tc.cost)
		}
	}
	// The database table: no caller left, so no time after one left.
	row := regexp.MustCompile(`(?s)<tr data-db-pattern="admission">.*?</tr>`).FindString(string(page))
	if c := cells(row); len(c) != 9 || strings.Join(c[5:], " ") != "— — — —" {
		t.Errorf("database row with no caller left: %q, want NoData in p50, p99, max and total", c)
	}
	if !regexp.MustCompile(`(?m)^  deadline \+ admission +60 +0 +0 +— +— +— +—$`).MatchString(term.String()) {
		t.Errorf("terminal database table:\n%s", term.String())
	}
}

// TestRungsReadAsASentence is the regression test for "the answers came
// from cache 120": the count goes before the rung, in words.
func TestRungsReadAsASentence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rungs map[string]int
		want  string
	}{
		{map[string]int{"cache": 120}, "all 120 answers came from cache"},
		{map[string]int{"cache": 1}, "the one answer came from cache"},
		{map[string]int{"cache": 97, "exact": 5}, "97 answers came from cache and 5 from exact"},
		{map[string]int{"exact": 1, "simplified": 2, "cache": 3}, "3 answers came from cache, 2 from simplified and 1 from exact"},
	} {
		if got := rungsText(tc.rungs); got != tc.want {
			t.Errorf("rungsText(%v) = %q, want %q", tc.rungs, got, tc.want)
		}
	}
}
