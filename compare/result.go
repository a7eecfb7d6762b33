package compare

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/timebudget/budget/budgettest"
)

// Result is what one run of a [Scenario] through one [Strategy] measured.
// Worker time is the dependency's: the sum, over its calls, of how long each
// one worked.
type Result struct {
	// Scenario and Strategy name what ran.
	Scenario, Strategy string

	// Requests is how many requests arrived.
	Requests int
	// Goodput is how many requests got an answer within the user's
	// patience, from the dependency or from the fallback.
	Goodput int
	// FromDependency is how many of those answers came from the
	// dependency.
	FromDependency int
	// Refused is how many requests never called the dependency.
	Refused int

	// Calls is how many calls the dependency received.
	Calls int
	// Busy is the dependency's worker time over all calls.
	Busy time.Duration
	// Wasted is the worker time the dependency spent after the user the
	// call was for had given up, measured by a budgettest.Probe tracking
	// each call against its request's context.
	Wasted time.Duration
	// Doomed is the worker time of calls whose answer reached no user in
	// time: Wasted plus what such calls spent before their user left.
	Doomed time.Duration

	// Stopped reports whether, from some moment after the second phase
	// began (the fault) and before the last phase began, every window held
	// at least the scenario's Share of requests that never called
	// the dependency: the strategy stopped calling the slow dependency.
	Stopped bool
	// StoppedAfter is how long after the start of the second phase that
	// moment came, by request arrival; meaningful only when Stopped.
	StoppedAfter time.Duration

	// Recovered reports whether, from some moment after the last phase
	// began, every window held at least the scenario's Share of
	// requests answered by the dependency in time.
	Recovered bool
	// Recovery is how long after the start of the last phase that moment
	// came, by request arrival; meaningful only when Recovered.
	Recovery time.Duration

	// GiveUpP50 and GiveUpP99 are quantiles, over requests the dependency
	// did not answer, of the time from arrival until the strategy turned to
	// the fallback or returned without an answer: how long a refusal or a
	// failure took to reach the caller.
	GiveUpP50, GiveUpP99 time.Duration
}

// measure turns the records of a run into a Result.
func (s Scenario) measure(strategy string, start time.Time, reqs []request, dep *dependency) Result {
	res := Result{Scenario: s.Name, Strategy: strategy, Requests: len(reqs)}
	var giveUp []time.Duration
	for i := range reqs {
		r := &reqs[i]
		if r.inTime() {
			res.Goodput++
			if r.answer == Full {
				res.FromDependency++
			}
		}
		if r.calls == 0 {
			res.Refused++
		}
		if r.answer != Full {
			giveUp = append(giveUp, r.gaveUp.Sub(r.arrival))
		}
	}
	res.GiveUpP50 = budgettest.Quantile(giveUp, 0.5)
	res.GiveUpP99 = budgettest.Quantile(giveUp, 0.99)
	res.Calls, res.Busy, res.Wasted, res.Doomed = dep.totals()
	if n := len(s.Phases); n > 0 {
		last := start.Add(s.Phases[n-1].At)
		res.Recovery, res.Recovered = s.settled(last, start.Add(s.Duration), reqs, func(r *request) bool {
			return r.answer == Full && r.inTime()
		})
		if n > 2 {
			res.StoppedAfter, res.Stopped = s.settled(start.Add(s.Phases[1].At), last, reqs, func(r *request) bool {
				return r.calls == 0
			})
		}
	}
	return res
}

// settled finds the first arrival at or after from such that every window of
// requests arriving from then on, up to end, holds at least the scenario's
// Share of requests for which ok holds, and returns how long after
// from it came. Windows slide by one request; only windows that end by end
// count.
func (s Scenario) settled(from, end time.Time, reqs []request, ok func(*request) bool) (time.Duration, bool) {
	width := s.Window
	if width <= 0 {
		width = 200 * time.Millisecond
	}
	share := s.Share
	if share <= 0 {
		share = 0.9
	}
	// good[i] counts the requests before i for which ok holds.
	good := make([]int, len(reqs)+1)
	for i := range reqs {
		good[i+1] = good[i]
		if ok(&reqs[i]) {
			good[i+1]++
		}
	}
	first := len(reqs)
	for i := range reqs {
		if !reqs[i].arrival.Before(from) {
			first = i
			break
		}
	}
	at := -1
	j := first
	for i := first; i < len(reqs); i++ {
		wend := reqs[i].arrival.Add(width)
		if wend.After(end) {
			break
		}
		for j < len(reqs) && reqs[j].arrival.Before(wend) {
			j++
		}
		switch {
		case float64(good[j]-good[i]) < share*float64(j-i):
			at = -1
		case at < 0:
			at = i
		}
	}
	if at < 0 {
		return 0, false
	}
	return reqs[at].arrival.Sub(from), true
}

// WriteTable writes results as an aligned table, one row per result, with
// worker time in worker-seconds.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tgoodput\tfrom dependency\trefused\tcalls\tbusy ws\twasted ws\tdoomed ws\tstopped calling\trecovery\tgive-up p50\tgive-up p99\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%s\t%s\t%v\t%v\t\n",
			r.Strategy, pct(r.Goodput, r.Requests), pct(r.FromDependency, r.Requests), r.Refused, r.Calls,
			r.Busy.Seconds(), r.Wasted.Seconds(), r.Doomed.Seconds(),
			after(r.StoppedAfter, r.Stopped), after(r.Recovery, r.Recovered),
			r.GiveUpP50.Round(time.Millisecond), r.GiveUpP99.Round(time.Millisecond))
	}
	return tw.Flush()
}

// after formats a measured delay, or "never".
func after(d time.Duration, ok bool) string {
	if !ok {
		return "never"
	}
	return d.Round(time.Millisecond).String()
}

// pct formats n of total as "n (p%)".
func pct(n, total int) string {
	if total == 0 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d (%.1f%%)", n, 100*float64(n)/float64(total))
}
