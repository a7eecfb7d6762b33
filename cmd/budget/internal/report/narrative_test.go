package report

import (
	"strings"
	"testing"
)

// admissionWith is the geo scenario's admission pattern with the given
// shares, as a run could have measured them.
func admissionWith(in, late, failed float64) Pattern {
	return Pattern{Name: "deadline + admission", Key: "admission", Requests: 120,
		AnsweredRatio: in, LateRatio: late, FailedRatio: failed, FailureCostMs: 12,
		Rungs: map[string]int{"cache": 97, "exact": 5}, RefusalsByStage: map[string]int{"geometry.exact": 90}}
}

// TestNarrativeStatesTheLateShare is the regression test for the fixed text
// that said admission "answers from the cache in time" of a run where 15 %
// of its answers were late: the sentence states the measured shares.
func TestNarrativeStatesTheLateShare(t *testing.T) {
	t.Parallel()
	got := patternSentence(admissionWith(0.85, 0.15, 0))
	for _, want := range []string{"85% of requests within the budget", "15% of requests after the user had stopped waiting", "97 answers came from cache and 5 from exact", "declined 90 attempts"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q\nlacks %q", got, want)
		}
	}
	for _, bad := range []string{"every request", "in time", "failed"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q\nclaims %q", got, bad)
		}
	}
}

// TestNarrativeSaysEveryOnlyWhenEvery is the other direction: with every
// request answered in budget the sentence says so, and names no late or
// failed share.
func TestNarrativeSaysEveryOnlyWhenEvery(t *testing.T) {
	t.Parallel()
	got := patternSentence(admissionWith(1, 0, 0))
	if !strings.Contains(got, "answered every request within the budget") {
		t.Errorf("%q does not say every request was answered in budget", got)
	}
	for _, bad := range []string{"stopped waiting", "failed", "%"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q mentions %q", got, bad)
		}
	}
	if got := patternSentence(admissionWith(0.999, 0, 0.001)); strings.Contains(got, "every request") {
		t.Errorf("%q says every request of a run that failed one", got)
	}
}

// TestNarrativeNamesTheBest checks the comparison sentences against a whole
// fabricated scenario, both ways round.
func TestNarrativeNamesTheBest(t *testing.T) {
	t.Parallel()
	s := syntheticScenario()
	got := strings.Join(Narrate(s), "\n")
	for _, want := range []string{"Most answers within the budget: deadline + admission, 100%", "Least work wasted after the caller had gone: deadline + admission"} {
		if !strings.Contains(got, want) {
			t.Errorf("narrative lacks %q:\n%s", want, got)
		}
	}
	if n := len(Narrate(s)); n != len(s.Patterns)+2 {
		t.Errorf("%d sentences, want one per pattern and two comparisons", n)
	}
	// When every pattern failed everything, no pattern is called best.
	for i := range s.Patterns {
		s.Patterns[i].AnsweredRatio, s.Patterns[i].LateRatio, s.Patterns[i].FailedRatio = 0, 0, 1
	}
	got = strings.Join(Narrate(s), "\n")
	if strings.Contains(got, "Most answers") || !strings.Contains(got, "No pattern answered a request within the budget.") {
		t.Errorf("narrative of a run where everything failed:\n%s", got)
	}
}
