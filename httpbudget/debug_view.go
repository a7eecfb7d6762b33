package httpbudget

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"html/template"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/internal/redact"
)

//go:embed debug.html
var debugHTML string

var debugTemplate = template.Must(template.New("debug").Funcs(template.FuncMap{"dur": debugDuration}).Parse(debugHTML))

// debugDuration writes a duration with its unit and three significant
// figures, so a short one keeps its value instead of rounding to 0.00 ms:
// 4.20 µs, 0.35 ms is 350 µs, 12.5 ms, 1.20 s.
func debugDuration(d time.Duration) string {
	a := d.Abs()
	var v float64
	var unit string
	switch {
	case a < time.Microsecond:
		return strconv.FormatInt(int64(d), 10) + " ns"
	case a < time.Millisecond:
		v, unit = float64(d)/1e3, " µs"
	case a < time.Second:
		v, unit = float64(d)/1e6, " ms"
	default:
		v, unit = float64(d)/1e9, " s"
	}
	prec := 2
	switch {
	case math.Abs(v) >= 100:
		prec = 0
	case math.Abs(v) >= 10:
		prec = 1
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + unit
}

// suggestedRule is the rule the page states for the suggested timeout.
const suggestedRule = "suggested timeout = 3 × measured p99 (3 × Prior while too few samples)"

// debugView is what the page shows; its JSON form is the page's JSON twin.
type debugView struct {
	Generated        time.Time    `json:"generated"`
	Rule             string       `json:"suggested_timeout_rule"`
	RepresentativeMS float64      `json:"representative_budget_ms"`
	Ops              []opView     `json:"ops"`
	Minutes          []string     `json:"minutes"`
	Refusals         []reasonRow  `json:"refusals"`
	Recent           []recentView `json:"recent"`
}

// opView is one op's row. The *MS figures are the JSON twin's, in
// milliseconds to the nanosecond; the page writes the durations beside them
// with their own unit (debugDuration), so that no figure rounds to zero.
type opView struct {
	Name string `json:"name"`
	// Samples is the count of the distribution the page shows, and
	// DecisionSamples the count the admission decision went by: the same
	// once measurements decide, 0 while the prior decides (Prior).
	Samples         int     `json:"samples"`
	DecisionSamples int     `json:"decision_samples"`
	Prior           bool    `json:"prior_decides"`
	Censored        int     `json:"censored"`
	MinSamples      int     `json:"min_samples"`
	P50MS           float64 `json:"p50_ms"`
	P99MS           float64 `json:"p99_ms"`
	// P99Known is false when the p99 lies beyond what the samples show (too
	// many were cut off): P99MS is then a lower bound, and so is the
	// suggested timeout (SuggestedLowerBound).
	P99Known            bool    `json:"p99_known"`
	SuggestedMS         float64 `json:"suggested_timeout_ms"`
	SuggestedLowerBound bool    `json:"suggested_timeout_lower_bound"`
	// NeedsMS is the least time the op admits an attempt with; NeedsKnown
	// is false when the op refuses for another reason than time (it is
	// stalled or throttled), so no time would do.
	NeedsMS    float64 `json:"needs_ms"`
	NeedsKnown bool    `json:"needs_known"`
	State      string  `json:"state"`
	// Regime is the op's admission regime (budget.Op.RegimeAt): measuring,
	// shedding, throttling, refusing or probing; RegimeSince when it began,
	// absent while the op has been measuring since it was created.
	Regime      string        `json:"regime"`
	RegimeSince *time.Time    `json:"regime_since,omitempty"`
	RegimeFor   time.Duration `json:"-"`
	Refusals    int           `json:"refusals"`

	P50, P99, Suggested, Needs time.Duration `json:"-"`
}

type reasonRow struct {
	Reason string `json:"reason"`
	Counts []int  `json:"counts"` // oldest minute first, as Minutes
	Total  int    `json:"total"`
}

type recentView struct {
	At       time.Time   `json:"at"`
	Stage    string      `json:"stage"`
	Reason   string      `json:"reason"`
	BudgetMS float64     `json:"budget_ms"`
	Dropped  int         `json:"dropped"`
	Events   []eventView `json:"events"`
}

type eventView struct {
	Kind        string  `json:"kind"`
	Stage       string  `json:"stage"`
	Outcome     string  `json:"outcome,omitempty"`
	OffsetMS    float64 `json:"offset_ms"`
	DurationMS  float64 `json:"duration_ms"`
	RemainingMS float64 `json:"remaining_ms"`
	Err         string  `json:"error,omitempty"`
	// Why says, for a refusal, what was needed against what was left (see
	// refusalWhy); empty for other events.
	Why   string  `json:"why,omitempty"`
	Left  float64 `json:"-"` // bar start, percent of the scale
	Width float64 `json:"-"` // bar width, percent of the scale
	Bad   bool    `json:"-"` // refused or expired

	Offset, Duration, Remaining time.Duration `json:"-"` // written with their unit
}

// msOf converts d to milliseconds for the JSON twin, to the nanosecond.
func msOf(d time.Duration) float64 { return float64(d) / 1e6 }

// ServeHTTP serves the page as HTML, or as JSON for ?format=json or an
// Accept header preferring application/json. Only GET and HEAD are allowed.
// A nil *DebugPage serves an empty page.
func (d *DebugPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d == nil {
		d = new(DebugPage)
	}
	if r == nil {
		http.Error(w, "httpbudget: the debug page got a nil *http.Request", http.StatusBadRequest)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "httpbudget: the debug page answers GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	v := d.view(time.Now())
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if wantsJSON(r) {
		h.Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	if err := debugTemplate.Execute(w, v); err != nil {
		http.Error(w, "httpbudget: rendering the debug page failed", http.StatusInternalServerError)
	}
}

func wantsJSON(r *http.Request) bool {
	if r.URL != nil {
		if f := r.URL.Query().Get("format"); f != "" {
			return f == "json"
		}
	}
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

// view takes a snapshot of the page's state at now.
func (d *DebugPage) view(now time.Time) debugView {
	d.mu.Lock()
	ops := slices.Clone(d.ops)
	stats := make([]opStats, len(ops))
	for i, op := range ops {
		stats[i] = *d.names[op.Name]
	}
	minutes := d.minutes
	for i := range minutes {
		minutes[i].reasons = maps(minutes[i].reasons)
	}
	recent := d.recentLocked()
	d.mu.Unlock()

	rep := time.Duration(d.arrival.Load())
	if rep <= 0 {
		rep = time.Second
	}
	v := debugView{Generated: now, Rule: suggestedRule, RepresentativeMS: msOf(rep)}
	minute := now.Unix() / 60
	for i, op := range ops {
		v.Ops = append(v.Ops, opViewOf(op, &stats[i], now, rep, minute))
	}
	slices.SortStableFunc(v.Ops, func(a, b opView) int { return cmp.Compare(a.Name, b.Name) })
	v.Minutes, v.Refusals = refusalRows(minutes[:], minute)
	scrub := func(s string) string {
		s = redact.String(s)
		if d.Redact != nil {
			s = d.Redact(s)
		}
		return s
	}
	for _, e := range recent {
		v.Recent = append(v.Recent, recentViewOf(e, scrub))
	}
	return v
}

func maps(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, n := range m {
		out[k] = n
	}
	return out
}

// recentLocked returns the ring's entries, newest first.
func (d *DebugPage) recentLocked() []recentEntry {
	out := make([]recentEntry, 0, len(d.ring))
	for i := range d.ring {
		out = append(out, d.ring[(d.next+i)%len(d.ring)])
	}
	slices.Reverse(out)
	return out
}

// opViewOf describes op at now. Its state is learning while the prior
// decides (too few samples); otherwise refusing when the op would refuse an
// attempt given rep, the budget of the latest request seen; probing when it
// refuses and let a probe through in the last ten seconds; and admitting
// otherwise.
func opViewOf(op *budget.Op, st *opStats, now time.Time, rep time.Duration, minute int64) opView {
	dist := op.Estimator.Distribution(now)
	minSamples := op.MinSamples
	if minSamples <= 0 {
		minSamples = 5
	}
	v := opView{Name: op.Name, Samples: dist.Count(), Censored: dist.Censored(), MinSamples: minSamples,
		P50: dist.Median(), Suggested: op.SuggestedTimeout()}
	v.P99, v.P99Known = dist.Quantile(0.99)
	adm := op.AdmitAt(now, budget.Ask{Available: rep})
	v.Prior = !adm.Measured
	if adm.Measured {
		v.DecisionSamples = v.Samples
	}
	// A p99 the samples cannot see is a lower bound, and so is 3 × it; the
	// prior's suggestion is not measured at all, and stays as it is.
	v.SuggestedLowerBound = adm.Measured && !v.P99Known
	// What the op needs is asked with a budget it cannot refuse for lack of
	// time, unless the estimate says it needs more: the decision's Needed
	// when it refused with the representative budget, or the least it
	// admits otherwise. Zero Needed on a refusal means time was not why.
	v.Needs = adm.Needed
	if adm.Admit || v.Needs == 0 {
		low := op.AdmitAt(now, budget.Ask{Available: op.MinUseful + time.Nanosecond})
		v.Needs = max(v.Needs, low.Needed)
	}
	v.NeedsKnown = adm.Admit || v.Needs > 0
	v.Needs = max(v.Needs, op.MinUseful)
	v.P50MS, v.P99MS, v.SuggestedMS, v.NeedsMS = msOf(v.P50), msOf(v.P99), msOf(v.Suggested), msOf(v.Needs)
	regime, since := op.RegimeAt(now)
	v.Regime = regime.String()
	if !since.IsZero() {
		v.RegimeSince, v.RegimeFor = &since, max(now.Sub(since), 0)
	}
	switch {
	case !adm.Measured && dist.Count() < minSamples:
		v.State = "learning"
	case adm.Admit:
		v.State = "admitting"
	case now.Sub(st.lastProbe) < debugProbes:
		v.State = "probing"
	default:
		v.State = "refusing"
	}
	for _, c := range st.refusals {
		if minute-c.minute < debugMinutes {
			v.Refusals += c.n
		}
	}
	return v
}

// refusalRows lays out the counts by reason, one column per minute, oldest
// first, ending with the current minute.
func refusalRows(buckets []minuteCounts, minute int64) ([]string, []reasonRow) {
	labels := make([]string, debugMinutes)
	rows := map[string]*reasonRow{}
	for i := range debugMinutes {
		m := minute - int64(debugMinutes-1-i)
		labels[i] = time.Unix(m*60, 0).UTC().Format("15:04")
		b := buckets[m%debugMinutes]
		if b.minute != m {
			continue
		}
		for reason, n := range b.reasons {
			row := rows[reason]
			if row == nil {
				row = &reasonRow{Reason: reason, Counts: make([]int, debugMinutes)}
				rows[reason] = row
			}
			row.Counts[i] += n
			row.Total += n
		}
	}
	out := make([]reasonRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b reasonRow) int { return cmp.Compare(a.Reason, b.Reason) })
	return labels, out
}

// recentViewOf lays out one request's ledger as a waterfall: each event's
// bar starts at its offset and spans its duration, as a percentage of the
// request's budget (or of the last event's end, for a request refused before
// it had a budget).
//
// Every stage and error message goes through scrub.
func recentViewOf(e recentEntry, scrub func(string) string) recentView {
	events := e.ledger.Events()
	total := e.ledger.Budget()
	if e.ledger == nil {
		events = []budget.Event{e.event}
	}
	scale := total
	for _, ev := range events {
		scale = max(scale, ev.Offset+ev.Duration)
	}
	if scale <= 0 {
		scale = time.Millisecond
	}
	v := recentView{At: e.at, Stage: scrub(e.event.Stage), Reason: e.reason, BudgetMS: msOf(total), Dropped: e.ledger.Dropped()}
	for _, ev := range events {
		row := eventView{Kind: ev.Kind.String(), Stage: scrub(ev.Stage), OffsetMS: msOf(ev.Offset),
			DurationMS: msOf(ev.Duration), RemainingMS: msOf(ev.Remaining),
			Offset: ev.Offset, Duration: ev.Duration, Remaining: ev.Remaining,
			Bad: ev.Kind == budget.EventRefuse || ev.Outcome == budget.OutcomeExpired}
		if ev.Outcome != budget.OutcomeNone {
			row.Outcome = ev.Outcome.String()
		}
		if ev.Err != nil {
			row.Err = scrub(redact.Error(ev.Err))
		}
		if ev.Kind == budget.EventRefuse {
			row.Why = refusalWhy(ev)
		}
		row.Left = percent(ev.Offset, scale)
		row.Width = max(percent(ev.Duration, scale), 0.4)
		row.Left = min(row.Left, 100-row.Width)
		v.Events = append(v.Events, row)
	}
	return v
}

func percent(d, of time.Duration) float64 {
	return math.Round(1000*min(max(float64(d)/float64(of), 0), 1)) / 10
}

// refusalWhy says why an op refused to start work, in the figures the
// refusal carries: what the estimate needed against the time left after the
// reserve (and before it, when they differ), or the reason that was not a
// lack of time. A bare "too little time left" beside "left 299 ms" says
// neither. The event and its [*budget.Error] carry the need, the time left
// and the outcome; they do not carry the quantile or probability behind the
// need, or the class share that shed an attempt, so those are named, not
// quantified.
func refusalWhy(ev budget.Event) string {
	avail, shedUnderLoad := ev.Remaining, false
	var be *budget.Error
	if errors.As(ev.Err, &be) {
		avail = be.Remaining
		shedUnderLoad = be.Err != nil && strings.Contains(be.Err.Error(), "shed under load")
	}
	left := "had " + debugDuration(avail) + " after the reserve"
	if avail != ev.Remaining && ev.Remaining > 0 {
		left += " (" + debugDuration(ev.Remaining) + " before it)"
	}
	switch ev.Outcome {
	case budget.OutcomeInsufficient:
		if ev.Needed > 0 && ev.Needed <= avail {
			// Refused with more time than Needed: Needed is then where the
			// op's measurements stop (its longest cut-off), not a need.
			return "its measurements stop at " + debugDuration(ev.Needed) + ", where calls were cut off, and say nothing about more: " +
				left + ", and calls have run past what its prior promises, so only a probe goes"
		}
		if ev.Needed > 0 {
			return "needed " + debugDuration(ev.Needed) + " by its estimate, " + left
		}
		if avail <= 0 {
			return "nothing left after the reserve: the " + debugDuration(ev.Remaining) + " left before it is held back for later work"
		}
		return "no estimate to meet: " + left + ", no more than the op can use, or its dependency stalled"
	case budget.OutcomeShed:
		if shedUnderLoad {
			return "shed under load: its class's share of the op's Limit was taken (" + left + ")"
		}
		if ev.Needed > 0 {
			return "refused on arrival: needed " + debugDuration(ev.Needed) + ", " + left
		}
		return "refused on arrival: " + left
	case budget.OutcomeThrottled:
		return "throttled: the dependency is failing, whatever the time left (" + left + ")"
	case budget.OutcomeExpired:
		return "not started: the deadline had passed"
	case budget.OutcomeCanceled:
		return "not started: the caller had gone"
	case budget.OutcomeRetrySuppressed:
		return "not retried: the retry quota is spent (" + left + ")"
	}
	return left
}
