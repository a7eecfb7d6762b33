package httpbudget

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/timebudget/budget"
)

// Defaults of a [DebugPage].
const (
	debugRecent  = 20               // refused or expired requests kept
	debugMinutes = 10               // minutes of refusal counts
	debugProbes  = 10 * time.Second // how long a probe marks an op as probing
)

// DebugPage is the /debug/budget page: for every registered [budget.Op], its
// measured latency (p50, p99), the timeout its measurements suggest and its
// admission state; refusals and expiries by reason over the last ten
// minutes; and the last refused or expired requests with their ledgers drawn
// as waterfalls. It serves HTML, or JSON for ?format=json or an Accept
// header that asks for application/json.
//
// The page learns about refusals from its [DebugPage.Observer]; set it on
// [NewHandler] with [edge.WithObserver] (or as a budget's or an Op's observer).
// The observer costs a few comparisons per event (and an atomic store per
// arrival, to remember the latest request's budget) and takes the page's
// lock only for refusals, expiries and probes: recording the last requests
// is a bounded ring, and everything else is computed when someone looks.
//
// Mount it on an internal mux only (it tells how the service spends its
// time): mux.Handle("/debug/budget", page). Even so, it shows no URL query
// string or user info, where API keys travel: error messages and stages are
// redacted in its HTML and its JSON, and [DebugPage.Redact] can hide more.
// It renders through html/template,
// so nothing that came from a request (a stage named after a host, an error
// message) is written unescaped, and it sends no script.
//
// The zero value is ready to use and keeps the last 20 requests; a DebugPage
// must not be copied after first use. It is safe for concurrent use.
type DebugPage struct {
	// Recent bounds the refused or expired requests kept for the page. Zero
	// means 20. Set it before first use.
	Recent int

	// Redact, when not nil, rewrites every text the page shows that came
	// from a request or an error (stage names and error messages), after
	// the page's own redaction, which always removes the user info, query
	// string and fragment of URLs (see [budget.RedactError]). Use it to hide
	// more, such as hosts or identifiers in paths. It is called while the
	// page renders, never on the request path. Set it before first use.
	Redact func(string) string

	arrival atomic.Int64 // the budget of the latest request seen, in ns

	mu      sync.Mutex
	ops     []*budget.Op
	names   map[string]*opStats // by registered op name
	ring    []recentEntry
	next    int // where the ring writes next once full
	minutes [debugMinutes]minuteCounts
}

// opStats is what the observer learns about a registered op.
type opStats struct {
	lastProbe   time.Time
	lastRefusal time.Time
	refusals    [debugMinutes]minuteCount
}

// minuteCount is a count within one minute since the Unix epoch.
type minuteCount struct {
	minute int64
	n      int
}

// minuteCounts counts refusals by reason within one minute.
type minuteCounts struct {
	minute  int64
	reasons map[string]int
}

// recentEntry is one refused or expired request.
type recentEntry struct {
	at     time.Time
	reason string
	event  budget.Event   // the event that refused or expired
	ledger *budget.Ledger // the request's ledger, nil when it had none
}

// NewDebugPage returns an empty page, ready to use: register the ops to show
// with [DebugPage.Register] and set [DebugPage.Observer] on the server.
func NewDebugPage() *DebugPage { return new(DebugPage) }

// Register adds ops to the page; an op registered twice is shown once, and
// nil ops are ignored. Register the same *budget.Op values the code calls:
// the page reads their measurements. Registering with a nil *DebugPage does
// nothing.
func (d *DebugPage) Register(ops ...*budget.Op) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names == nil {
		d.names = map[string]*opStats{}
	}
	for _, op := range ops {
		if op == nil || slices.Contains(d.ops, op) {
			continue
		}
		d.ops = append(d.ops, op)
		if d.names[op.Name] == nil {
			d.names[op.Name] = new(opStats)
		}
	}
}

// Observer returns the observer that feeds the page: refusals and expiries
// by reason, the last refused or expired requests, and probes of registered
// ops. It is safe for concurrent use and allocates nothing. The observer of a
// nil *DebugPage does nothing.
func (d *DebugPage) Observer() budget.Observer { return debugObserver{d} }

type debugObserver struct{ d *DebugPage }

// Observe implements [budget.Observer].
func (o debugObserver) Observe(ctx context.Context, ev budget.Event) {
	d := o.d
	if d == nil {
		return
	}
	switch {
	case ev.Kind == budget.EventArrival:
		d.arrival.Store(int64(ev.Remaining))
		return
	case ev.Probe:
		d.noteProbe(ev.Stage)
	}
	reason, request := debugReason(ev)
	if reason == "" {
		return
	}
	d.note(ctx, ev, reason, request)
}

// debugReason says whether ev is a refusal or an expiry, and whether it
// belongs in the list of recent requests (a header ignored for skew or
// malformation does not: the request went on).
func debugReason(ev budget.Event) (reason string, request bool) {
	switch {
	case ev.Kind == budget.EventRefuse:
		return ev.Outcome.String(), true
	case ev.Kind == budget.EventSkew:
		return "skew", false
	case ev.Kind == budget.EventMalformed:
		return "malformed", false
	case ev.Outcome == budget.OutcomeExpired:
		return ev.Outcome.String(), true
	}
	return "", false
}

func (d *DebugPage) noteProbe(stage string) {
	d.mu.Lock()
	if s := d.names[stage]; s != nil {
		s.lastProbe = time.Now()
	}
	d.mu.Unlock()
}

// note counts a refusal or expiry and keeps its request.
func (d *DebugPage) note(ctx context.Context, ev budget.Event, reason string, request bool) {
	now := time.Now()
	minute := now.Unix() / 60
	var ledger *budget.Ledger
	if ctx != nil {
		ledger = budget.LedgerFrom(ctx)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	b := &d.minutes[minute%debugMinutes]
	if b.minute != minute || b.reasons == nil {
		*b = minuteCounts{minute: minute, reasons: map[string]int{}}
	}
	b.reasons[reason]++
	if s := d.names[ev.Stage]; s != nil && ev.Kind == budget.EventRefuse {
		s.lastRefusal = now
		c := &s.refusals[minute%debugMinutes]
		if c.minute != minute {
			*c = minuteCount{minute: minute}
		}
		c.n++
	}
	if !request {
		return
	}
	if ledger != nil {
		for _, e := range d.ring {
			if e.ledger == ledger {
				return // one entry per request
			}
		}
	}
	e := recentEntry{at: now, reason: reason, event: ev, ledger: ledger}
	keep := d.Recent
	if keep <= 0 {
		keep = debugRecent
	}
	if len(d.ring) < keep {
		d.ring = append(d.ring, e)
		return
	}
	d.ring[d.next%len(d.ring)] = e
	d.next = (d.next + 1) % len(d.ring)
}
