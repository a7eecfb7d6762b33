package pattern

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/timebudget/budget/edge"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/cmd/budget/internal/dependency"
	"github.com/timebudget/budget/cmd/budget/internal/scenario"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// Edge is the service the user calls. It runs a scenario's stages under one
// pattern and answers with the rung that answered, or with the stage that
// failed and why.
type Edge struct {
	// Pat is the pattern the edge spends time by; PerCall the fixed
	// timeout of each hop in the per-call pattern.
	Pat     Pattern
	PerCall time.Duration
	// Reserve is held back to write the answer in the admission pattern.
	Reserve time.Duration
	// Stages run one after another for each request.
	Stages []Stage

	// mu guards Ledgers, the spend ledgers kept by request index, and
	// Refusals.
	mu       sync.Mutex
	Ledgers  map[int]*budget.Ledger
	Refusals map[string]int // stage → attempts refused before they started
}

// Stage is one stage of a scenario's path at the edge: one rung, or a
// ladder of them tried in order (exact, simplified, cache).
type Stage struct {
	// Name is the stage's name in ledgers and reports; Rungs are tried in
	// order until one answers.
	Name  string
	Rungs []Rung
	// Ladder holds the rungs when there are several; the admission pattern
	// runs it: it declines a rung that cannot finish while keeping time for
	// the last.
	Ladder *budget.Ladder[string]
}

// Rung is one rung of a stage: a hop to a dependency, or the local cache
// when hop is nil. op measures the rung's latency and decides admission in
// the admission pattern.
type Rung struct {
	// Name is the rung's name, Hop the call it makes (nil for the cache),
	// Op its latency estimate and admission.
	Name string
	Hop  dependency.Hop
	Op   *budget.Op
}

// Call makes one attempt of the rung: the hop, or the cache's local work.
func (r Rung) Call(ctx context.Context) error {
	if r.Hop != nil {
		return r.Hop.Call(ctx)
	}
	t := time.NewTimer(scenario.CacheLatency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Answer is the edge's response body.
type Answer struct {
	Rung   string `json:"rung,omitempty"`   // the rung of the last stage that answered
	Stage  string `json:"stage,omitempty"`  // the stage that failed
	Reason string `json:"reason,omitempty"` // refused, timeout, canceled or failed
	Error  string `json:"error,omitempty"`
}

// ServeHTTP runs the scenario's stages one after another under the edge's
// pattern and answers with the rung of the last stage that answered, or
// with the stage that failed and why: 504 with Budget-Expired when time ran
// out or the stage was refused, 502 when a dependency failed.
func (e *Edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	idx, _ := strconv.Atoi(r.URL.Query().Get("i"))
	ctx := r.Context()
	if l := budget.LedgerFrom(ctx); l != nil {
		// The edge's inbound policy started the budget on arrival.
		defer e.keepLedger(idx, l)
	}
	ctx = e.Pat.Spend.request(ctx, e)
	var ans Answer
	for _, st := range e.Stages {
		rung, err := e.Pat.Spend.stage(ctx, e, st)
		if err != nil {
			ans = Answer{Stage: st.Name, Reason: reasonOf(err), Error: err.Error()}
			code := http.StatusGatewayTimeout
			if ans.Reason == "failed" {
				code = http.StatusBadGateway
			} else {
				w.Header().Set("Budget-Expired", st.Name)
			}
			writeJSON(w, code, ans)
			return
		}
		if len(st.Rungs) > 1 {
			ans.Rung = rung
		}
	}
	writeJSON(w, http.StatusOK, ans)
}

// keepLedger keeps request idx's ledger for the report and counts its
// refusals by stage. It is called as each request ends, concurrently.
func (e *Edge) keepLedger(idx int, l *budget.Ledger) {
	if l == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Ledgers[idx] = l
	for _, ev := range l.Events() {
		if ev.Kind == budget.EventRefuse {
			e.Refusals[ev.Stage]++
		}
	}
}

// reasonOf names why a stage failed, for the response and the table.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, budget.ErrInsufficient):
		return "refused"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "failed"
}

// outcomeOf names how an attempt of the shared-deadline pattern ended,
// for the events it notes in the ledger itself.
func outcomeOf(err error) budget.Outcome {
	switch {
	case err == nil:
		return budget.OutcomeOK
	case errors.Is(err, context.DeadlineExceeded):
		return budget.OutcomeExpired
	case errors.Is(err, context.Canceled):
		return budget.OutcomeCanceled
	}
	return budget.OutcomeFailed
}

// writeJSON writes v as the JSON body of a response with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// EdgeHTTP wraps the edge's handler with the policy of a service whose
// latency is promised: whatever the client sends, every request starts a
// fresh budget of b. Its budgets report to the live page, when there is one.
func EdgeHTTP(h http.Handler, b time.Duration, page *httpbudget.DebugPage) http.Handler {
	opts := []edge.ServerOption{edge.WithPolicy(&wire.Policy{Trust: wire.SourcesNone, Default: b}),
		edge.WithStage("edge")}
	if page != nil {
		opts = append(opts, edge.WithObserver(page.Observer()))
	}
	return httpbudget.NewHandler(h, opts...)
}

// Pattern is one way of spending time across the hops, as in the project's
// comparison table. Every pattern runs on the same traffic and the same
// faults; what differs is its spending strategy.
type Pattern struct {
	Key   string // used in report.json and --help
	Name  string // shown in the table
	About string // one line for the report
	Spend spending
}

// spending is how a pattern spends a request's time at the edge. Each
// pattern is one implementation, so the edge's code has no branch per
// pattern: it asks the strategy.
type spending interface {
	// BudgetAware reports whether the edge starts a budget on arrival and the
	// transports send the time left on every hop (see wiring).
	BudgetAware() bool
	// request prepares the context a request's stages run in.
	request(ctx context.Context, e *Edge) context.Context
	// stage runs one stage and returns the name of the rung that answered,
	// or the last rung's error.
	stage(ctx context.Context, e *Edge, st Stage) (string, error)
}
