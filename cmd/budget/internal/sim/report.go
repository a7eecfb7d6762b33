package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/timebudget/budget/cmd/budget/internal/format"
)

// Report is everything report.json holds. Field names are stable.
type Report struct {
	// File is the topology file simulated.
	File string `json:"file"`
	// Entry, BudgetMs and Services describe the topology.
	Entry    string  `json:"entry"`
	BudgetMs float64 `json:"budget_ms"`
	Services int     `json:"services"`
	// Requests, Rate, Concurrency, Seed, Workers and Faults repeat the
	// configuration (with its defaults filled in); Rate is 0 for a closed
	// loop.
	Requests    int      `json:"requests"`
	Rate        float64  `json:"rate_per_second"`
	Concurrency int      `json:"concurrency"`
	Seed        uint64   `json:"seed"`
	Workers     int      `json:"default_workers"`
	Faults      []string `json:"faults"`
	// GiveUpMs is how long a user waits before giving up on a request.
	GiveUpMs float64 `json:"give_up_ms"`
	// HorizonS is how long, in seconds, a run with a fault that ends goes
	// on past its end (Config.Horizon); 0 when no fault ends.
	HorizonS float64 `json:"recovery_horizon_s,omitempty"`
	// WallSeconds is how long the simulation took to run, the only figure
	// that varies between runs with the same seed.
	WallSeconds float64 `json:"wall_seconds"`
	// Results has one entry per pattern, in the order of Patterns.
	Results []Result `json:"results"`
}

// NewReport describes results of simulating the topology in file with cfg.
func NewReport(file string, entry string, budgetMs float64, services int, cfg Config, results []Result) *Report {
	cfg = cfg.withDefaults()
	r := &Report{File: file, Entry: entry, BudgetMs: budgetMs, Services: services,
		Requests: cfg.Requests, Rate: cfg.Rate, Concurrency: cfg.Concurrency, Seed: cfg.Seed,
		Workers: cfg.Workers, Faults: []string{}, GiveUpMs: GiveUpFactor * budgetMs, Results: results}
	if cfg.Rate > 0 {
		r.Concurrency = 0
	}
	for _, f := range cfg.Faults {
		r.Faults = append(r.Faults, f.String())
		if f.Ends() {
			r.HorizonS = cfg.Horizon.Seconds()
		}
	}
	return r
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Traffic describes the load in words.
func (r *Report) Traffic() string {
	load := fmt.Sprintf("%d users in a closed loop", r.Concurrency)
	if r.Rate > 0 {
		load = fmt.Sprintf("%g requests/s", r.Rate)
	}
	faults := "none"
	if len(r.Faults) > 0 {
		faults = strings.Join(r.Faults, ", ")
	}
	return fmt.Sprintf("budget %s · %d requests per pattern, %s · faults: %s · seed %d", format.Ms(r.BudgetMs), r.Requests, load, faults, r.Seed)
}

// WriteTable writes the results as a table, one row per pattern.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%s: %d services, entry %s\n  %s\n\n", r.File, r.Services, r.Entry, r.Traffic())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	faults := len(r.Faults) > 0
	head := "pattern             \tp50\tp99\tin budget\tlate\tfailed\tfailure p50\tfailure p99\twasted work\tgoodput\t"
	if faults {
		head += "others in budget\t"
	}
	fmt.Fprintln(tw, head+"refused before starting\t")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t", fmt.Sprintf("%-20s", res.Name),
			format.Ms(res.LatencyMs.P50), format.Ms(res.LatencyMs.P99), format.Pct(res.InBudget), format.Pct(res.Late), format.Pct(res.Failed),
			format.OrDash(res.Failed > 0, format.Ms(res.FailureLatencyMs.P50)), format.OrDash(res.Failed > 0, format.Ms(res.FailureLatencyMs.P99)),
			format.Seconds(res.WastedWorkSeconds), fmt.Sprintf("%.0f/s", res.GoodputPerSecond))
		if faults {
			fmt.Fprintf(tw, "%s\t", format.OrDash(res.Others > 0, format.Pct(res.OthersInBudget)))
		}
		fmt.Fprintf(tw, "%s\t\n", format.Counts(res.RefusedBeforeStarting))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := r.writeRecovery(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, n := range r.Notes() {
		fmt.Fprintf(w, "· %s\n", n)
	}
	return nil
}

// Recoveries reports whether any pattern has recovery figures: whether a
// fault ends.
func (r *Report) Recoveries() bool {
	for _, res := range r.Results {
		if len(res.Recovery) > 0 {
			return true
		}
	}
	return false
}

// writeRecovery writes the recovery table, one row per pattern and fault
// that ends, when there is one.
func (r *Report) writeRecovery(w io.Writer) error {
	if !r.Recoveries() {
		return nil
	}
	fmt.Fprintf(w, "\nrecovery after the fault ends\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pattern             \tfault\tanswers before\tfirst answer\t90% of the rate before\t")
	for _, res := range r.Results {
		for _, rc := range res.Recovery {
			fmt.Fprintf(tw, "%s\t%s\t%.0f/s\t%s\t%s\t\n", fmt.Sprintf("%-20s", res.Name), rc.Fault,
				rc.PreFaultPerSecond, rc.FirstAnswer, rc.Rate)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, res := range r.Results {
		for _, rc := range res.Recovery {
			if !rc.Ended {
				fmt.Fprintf(w, "  %s: %s had not ended when the last request was sent: the pattern sent the most requests a run may send past --requests (%d)\n", res.Name, rc.Fault, MaxRecoveryRequests)
			}
		}
	}
	return nil
}

// Notes explain how to read the figures.
func (r *Report) Notes() []string {
	notes := r.notes()
	if r.Recoveries() {
		sent := make([]string, len(r.Results))
		for i, res := range r.Results {
			sent[i] = fmt.Sprintf("%s %d", res.Name, res.Requests)
		}
		notes = append(notes, RecoveryNote,
			fmt.Sprintf("With a fault that ends, every pattern sends requests until it has sent %d and until %s past the fault's end, however fast it answers; requests sent: %s.",
				r.Requests, format.Seconds(r.HorizonS), strings.Join(sent, ", ")))
	}
	return notes
}

// RecoveryNote defines the recovery figures for readers of the report.
const RecoveryNote = "Recovery, for a fault that ends: an answer is a call to the faulty service that succeeded while every caller up to the user still waited. " +
	"Answers before: their rate from the first request to the fault's start. First answer: the time from the fault's end to the first answer. " +
	"90% of the rate before: the time from the fault's end to the end of the first window [end + k·w, end + (k+1)·w) with at least 90% of the rate before, " +
	"w being 100 ms (or the time 20 answers took before the fault, when that is longer); only windows that end before the last request is sent count. " +
	"Never: not within the run, which goes on past the fault's end as the next note says. A hung call is released when its fault ends."

func (r *Report) notes() []string {
	return []string{
		"Virtual time: a discrete-event simulation, not a measurement; latencies are drawn from log-normal distributions fitted to each service's p50 and p99.",
		fmt.Sprintf("In budget: answered within %s. Late: answered after it. Failed: an error, a refusal, or no answer by %s, when the user gives up.", format.Ms(r.BudgetMs), format.Ms(r.GiveUpMs)),
		"Wasted work: worker time services held after the request they served was given up; work still running when the last request ended counts up to that moment.",
		"Goodput: requests answered within the budget per simulated second. Others in budget: the share answered within the budget of the requests that never reached a faulty service (not needing it, or queued behind workers parked on it), which a fault should not touch.",
		"Admission is budget.Op's own, run on virtual time: each service holds one Op per dependency, with the callee's declared p99 (plus its callees') as prior; it admits on its estimate of the callee's latency (timed-out attempts as cut-offs), refuses a stalled callee, probes one it refuses, and throttles one that fails.",
	}
}
