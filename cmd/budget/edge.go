package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// edge is the service the user calls. It runs a scenario's stages under one
// pattern and answers with the rung that answered, or with the stage that
// failed and why.
type edge struct {
	pat     pattern
	perCall time.Duration
	// reserve is held back to write the answer in the admission pattern.
	reserve time.Duration
	stages  []edgeStage

	mu       sync.Mutex
	ledgers  map[int]*budget.Ledger
	refusals map[string]int // stage → attempts refused before they started
}

type edgeStage struct {
	name  string
	rungs []edgeRung
	// ladder holds the rungs when there are several; the admission pattern
	// runs it: it declines a rung that cannot finish while keeping time for
	// the last.
	ladder *budget.Ladder[string]
}

// edgeRung is one rung of a stage: a hop to a dependency, or the local cache
// when hop is nil. op measures the rung's latency and decides admission in
// the admission pattern.
type edgeRung struct {
	name string
	hop  hop
	op   *budget.Op
}

// call makes one attempt of the rung: the hop, or the cache's local work.
func (r edgeRung) call(ctx context.Context) error {
	if r.hop != nil {
		return r.hop.call(ctx)
	}
	t := time.NewTimer(cacheLatency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// edgeAnswer is the edge's response body.
type edgeAnswer struct {
	Rung   string `json:"rung,omitempty"`   // the rung of the last stage that answered
	Stage  string `json:"stage,omitempty"`  // the stage that failed
	Reason string `json:"reason,omitempty"` // refused, timeout, canceled or failed
	Error  string `json:"error,omitempty"`
}

// ServeHTTP runs the scenario's stages one after another under the edge's
// pattern and answers with the rung of the last stage that answered, or
// with the stage that failed and why: 504 with Budget-Expired when time ran
// out or the stage was refused, 502 when a dependency failed.
func (e *edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	idx, _ := strconv.Atoi(r.URL.Query().Get("i"))
	ctx := r.Context()
	if l := budget.LedgerFrom(ctx); l != nil {
		// The edge's inbound policy started the budget on arrival.
		defer e.keepLedger(idx, l)
	}
	ctx = e.pat.spend.request(ctx, e)
	var ans edgeAnswer
	for _, st := range e.stages {
		rung, err := e.pat.spend.stage(ctx, e, st)
		if err != nil {
			ans = edgeAnswer{Stage: st.name, Reason: reasonOf(err), Error: err.Error()}
			code := http.StatusGatewayTimeout
			if ans.Reason == "failed" {
				code = http.StatusBadGateway
			} else {
				w.Header().Set("Budget-Expired", st.name)
			}
			writeJSON(w, code, ans)
			return
		}
		if len(st.rungs) > 1 {
			ans.Rung = rung
		}
	}
	writeJSON(w, http.StatusOK, ans)
}

// keepLedger keeps request idx's ledger for the report and counts its
// refusals by stage. It is called as each request ends, concurrently.
func (e *edge) keepLedger(idx int, l *budget.Ledger) {
	if l == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ledgers[idx] = l
	for _, ev := range l.Events() {
		if ev.Kind == budget.EventRefuse {
			e.refusals[ev.Stage]++
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

// edgeHTTP wraps the edge's handler with the policy of a service whose
// latency is promised: whatever the client sends, every request starts a
// fresh budget of b. Its budgets report to the live page, when there is one.
func edgeHTTP(h http.Handler, b time.Duration, page *httpbudget.DebugPage) http.Handler {
	opts := []httpbudget.ServerOption{httpbudget.WithPolicy(&wire.Policy{Trust: wire.SourcesNone, Default: b}),
		httpbudget.WithStage("edge")}
	if page != nil {
		opts = append(opts, httpbudget.WithObserver(page.Observer()))
	}
	return httpbudget.NewHandler(h, opts...)
}
