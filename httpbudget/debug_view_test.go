package httpbudget

import (
	"bytes"
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget"
)

// opRow renders the page for ops at now, with a representative budget of
// rep, and returns the view of the op named name and its table row.
func opRow(t *testing.T, rep time.Duration, now time.Time, name string, ops ...*budget.Op) (opView, string) {
	t.Helper()
	d := NewDebugPage()
	d.Register(ops...)
	d.arrival.Store(int64(rep))
	v := d.view(now)
	var buf bytes.Buffer
	if err := debugTemplate.Execute(&buf, v); err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`<tr class="op" data-op="` + name + `">.*</tr>`).FindString(buf.String())
	if row == "" {
		t.Fatalf("no row for %s in\n%s", name, buf.String())
	}
	for _, o := range v.Ops {
		if o.Name == name {
			return o, row
		}
	}
	t.Fatalf("no op %s in the view", name)
	return opView{}, ""
}

// cell returns the text of the row's cell of class class, tags removed.
func cell(t *testing.T, row, class string) string {
	t.Helper()
	m := regexp.MustCompile(`<td class="num ` + class + `">(.*?)</td>`).FindStringSubmatch(row)
	if m == nil {
		t.Fatalf("no %s cell in %s", class, row)
	}
	return regexp.MustCompile(`<[^>]*>`).ReplaceAllString(m[1], "")
}

// TestDebugNeedsKeepsMicroseconds is the regression test for a refusing op
// whose need, tens of microseconds, showed as 0.00 ms: the page writes it
// with its unit, and the JSON twin keeps it to the nanosecond.
func TestDebugNeedsKeepsMicroseconds(t *testing.T) {
	t.Parallel()
	now := time.Now()
	op := &budget.Op{Name: "tiny", Prior: 3 * time.Microsecond}
	for i := range 40 {
		op.Estimator.RecordAt(now, 40*time.Microsecond+time.Duration(i%20)*time.Microsecond)
	}
	v, row := opRow(t, 10*time.Microsecond, now, "tiny", op)
	if v.State != "refusing" {
		t.Fatalf("state %s, want refusing: a 10µs budget is short of 40–60µs", v.State)
	}
	if !v.NeedsKnown || v.Needs < 40*time.Microsecond || v.Needs > time.Millisecond || v.NeedsMS < 0.04 {
		t.Errorf("needs %v (%.4f ms, known %v), want the 40–60µs the samples show", v.Needs, v.NeedsMS, v.NeedsKnown)
	}
	needs := cell(t, row, "needs")
	if !strings.HasSuffix(needs, " µs") || strings.HasPrefix(needs, "0") {
		t.Errorf("needs cell %q, want tens of µs", needs)
	}
}

// TestDebugSuggestedLowerBound checks that a suggested timeout computed from
// a p99 the samples cannot see (most calls were cut off) is marked as a
// lower bound, on the page (≥) and in the JSON twin.
func TestDebugSuggestedLowerBound(t *testing.T) {
	t.Parallel()
	now := time.Now()
	op := &budget.Op{Name: "cut", Prior: 10 * time.Millisecond}
	for i := range 40 {
		if i%2 == 0 {
			op.Estimator.RecordAt(now, 10*time.Millisecond)
		} else {
			op.Estimator.RecordCensoredAt(now, 40*time.Millisecond)
		}
	}
	v, row := opRow(t, time.Second, now, "cut", op)
	if v.P99Known || !v.SuggestedLowerBound {
		t.Fatalf("p99 known %v, suggested lower bound %v; want an unknown p99 and a bound", v.P99Known, v.SuggestedLowerBound)
	}
	if got := cell(t, row, "suggested"); !strings.HasPrefix(got, "≥ ") || !strings.HasSuffix(got, " ms") {
		t.Errorf("suggested cell %q, want ≥ N ms", got)
	}
	if got := cell(t, row, "p99"); !strings.HasPrefix(got, "≥ ") {
		t.Errorf("p99 cell %q, want ≥ N ms", got)
	}

	// And with every call completed, neither is marked.
	full := &budget.Op{Name: "full", Prior: 10 * time.Millisecond}
	for range 40 {
		full.Estimator.RecordAt(now, 10*time.Millisecond)
	}
	v, row = opRow(t, time.Second, now, "full", full)
	if !v.P99Known || v.SuggestedLowerBound || strings.Contains(row, "≥") {
		t.Errorf("fully measured op: p99 known %v, lower bound %v, row %s", v.P99Known, v.SuggestedLowerBound, row)
	}
}

// TestDebugSamplesAreTheDecisions checks that the samples column is the
// count the admission decision went by: none while the prior decides, the
// distribution's count once measurements do.
func TestDebugSamplesAreTheDecisions(t *testing.T) {
	t.Parallel()
	now := time.Now()
	fresh := &budget.Op{Name: "fresh", Prior: 5 * time.Millisecond, MinSamples: 8}
	for range 3 {
		fresh.Estimator.RecordAt(now, time.Millisecond)
	}
	v, row := opRow(t, time.Second, now, "fresh", fresh)
	if !v.Prior || v.DecisionSamples != 0 {
		t.Errorf("fresh op: prior %v, decision samples %d; want the prior deciding on none", v.Prior, v.DecisionSamples)
	}
	if got := cell(t, row, "samples"); got != "prior · 3/8" {
		t.Errorf("samples cell %q, want prior · 3/8", got)
	}
	if got := cell(t, row, "suggested"); !strings.Contains(got, "(prior)") || !strings.HasPrefix(got, "15.0 ms") {
		t.Errorf("suggested cell %q, want 3 × the 5ms prior, marked", got)
	}

	warm := &budget.Op{Name: "warm", Prior: 5 * time.Millisecond}
	for range 30 {
		warm.Estimator.RecordAt(now, time.Millisecond)
	}
	v, row = opRow(t, time.Second, now, "warm", warm)
	if v.Prior || v.DecisionSamples != v.Samples || v.Samples < 5 {
		t.Errorf("warm op: prior %v, decision samples %d of %d", v.Prior, v.DecisionSamples, v.Samples)
	}
	if got := cell(t, row, "samples"); got != strconv.Itoa(v.Samples) {
		t.Errorf("samples cell %q, want %d", got, v.Samples)
	}
}

// TestDebugDuration pins how the page writes a duration: three significant
// figures and a unit, never 0.00 for a positive time.
func TestDebugDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0 ns"}, {800, "800 ns"}, {4200, "4.20 µs"}, {350 * time.Microsecond, "350 µs"},
		{12500 * time.Microsecond, "12.5 ms"}, {120 * time.Millisecond, "120 ms"}, {1200 * time.Millisecond, "1.20 s"},
	} {
		if got := debugDuration(tc.d); got != tc.want {
			t.Errorf("debugDuration(%d) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestDebugTablesDoNotBreakWords checks the page's style: no rule breaks a
// word mid-way, numbers and names stay on one line, and each table scrolls
// sideways inside its own box on a narrow screen instead.
func TestDebugTablesDoNotBreakWords(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"anywhere", "break-all", "break-word"} {
		if strings.Contains(debugHTML, bad) {
			t.Errorf("the page's style breaks words (%s)", bad)
		}
	}
	for _, want := range []string{"word-break: normal", "white-space: nowrap", "overflow-x: auto"} {
		if !strings.Contains(debugHTML, want) {
			t.Errorf("the page's style lacks %q", want)
		}
	}
	if tables, boxed := strings.Count(debugHTML, "<table"), strings.Count(debugHTML, "<div class=\"scroll\">\n<table"); tables != boxed || tables != 3 {
		t.Errorf("%d tables, %d in a scrolling box; want all 3 boxed", tables, boxed)
	}
}

// TestDebugRefusalSaysWhatWasNeeded is the regression test for a refusal
// made on measurements shown as "too little time left" beside "left
// 299 ms": the page says what the estimate needed against what was left
// after the reserve, or why time was not the reason.
func TestDebugRefusalSaysWhatWasNeeded(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	refusal := func(outcome budget.Outcome, needed time.Duration, err error) recentEntry {
		be := &budget.Error{Stage: "geometry", Outcome: outcome, Remaining: 254 * ms, Needed: needed, Budget: 300 * ms, Err: err}
		return recentEntry{at: time.Unix(1000, 0), reason: outcome.String(), event: budget.Event{
			Kind: budget.EventRefuse, Stage: "geometry", Remaining: 299 * ms, Needed: needed, Outcome: outcome, Err: be}}
	}
	for _, tc := range []struct {
		name string
		e    recentEntry
		want string
	}{
		{"measured", refusal(budget.OutcomeInsufficient, 312*ms, nil),
			"needed 312 ms by its estimate, had 254 ms after the reserve (299 ms before it)"},
		// Refused with more time than Needed: the samples end there.
		{"past the samples", refusal(budget.OutcomeInsufficient, 210*ms, nil),
			"its measurements stop at 210 ms, where calls were cut off, and say nothing about more: had 254 ms after the reserve (299 ms before it)"},
		{"no estimate", refusal(budget.OutcomeInsufficient, 0, nil),
			"no estimate to meet: had 254 ms after the reserve (299 ms before it), no more than the op can use, or its dependency stalled"},
		{"reserve took it all", func() recentEntry {
			e := refusal(budget.OutcomeInsufficient, 0, nil)
			e.event.Remaining, e.event.Err.(*budget.Error).Remaining = 20*ms, -10*ms
			return e
		}(), "nothing left after the reserve: the 20.0 ms left before it is held back for later work"},
		{"throttled", refusal(budget.OutcomeThrottled, 0, nil), "throttled: the dependency is failing, whatever the time left"},
		{"expired", refusal(budget.OutcomeExpired, 0, nil), "not started: the deadline had passed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := recentViewOf(tc.e, func(s string) string { return s })
			var buf bytes.Buffer
			if err := debugTemplate.Execute(&buf, &debugView{Recent: []recentView{v}}); err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`<td class="err">(.*?)</td>`).FindStringSubmatch(buf.String())
			if m == nil {
				t.Fatalf("no error cell in\n%s", buf.String())
			}
			got := html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(m[1], ""))
			if !strings.Contains(got, tc.want) {
				t.Errorf("the refusal reads %q, want %q", got, tc.want)
			}
			if strings.Contains(got, "too little time left") {
				t.Errorf("the refusal still reads %q", got)
			}
		})
	}
}
