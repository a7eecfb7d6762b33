package overload

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// The budget variant's tuning, both documented options sized from the
// budget rather than left at values made for other services:
//
//   - The backend's Queue bounds how long an item put while the queue is
//     standing may wait (Target) to a quarter of the budget, instead of
//     CoDel's 5 ms: with 4 ms of work a request, 5 ms is about one request's
//     wait, so a standing queue shed admitted work, critical work included,
//     that would have finished well inside its budget. The Queue still
//     refuses on arrival what cannot wait and finish in time, and serves the
//     most critical class first while standing.
//   - The Op around the middle's calls to the backend has Limit = what the
//     backend's CPUs serve in that time (Little's law: Target over one
//     request's CPU time, per CPU), so the backend holds no more work than it
//     can start within Target, and the Limit's class shares (sheddable half,
//     critical the top quarter) are sized by time, not by a small count: a
//     Limit of four per CPU refused sheddable work at 0.8x capacity that
//     would have finished in time.
func budgetTarget(p params) time.Duration { return p.Budget / 4 }

// budgetLimit is the Op's Limit: the requests the backend's CPUs serve in
// budgetTarget.
func budgetLimit(p params) int {
	return max(1, int(budgetTarget(p)/max(p.Work, time.Millisecond))) * max(p.Procs, 1)
}

// budgetSetting says how the budget variant is configured.
func budgetSetting(p params) string {
	return fmt.Sprintf("httpbudget middleware on every hop (the edge: Default = Max = %v, trusts only the Request-Timeout-Ms its users' client sends, classifies by route) and Transport on every client; "+
		"an Op around the middle's calls to the backend, defaults but tuned: Limit %d (Little's law: what %d backend CPU(s) serve in the queue's Target, %v / %v each); "+
		"the backend's work goes through a budget.Queue served by one worker per backend CPU, MinUseful = the work's CPU time, tuned: Target %v (a quarter of the budget, not CoDel's 5 ms), other fields default",
		p.Budget, budgetLimit(p), max(p.Procs, 1), budgetTarget(p), p.Work, budgetTarget(p))
}

// criticalityOf maps the harness's class names to budget's classes.
func criticalityOf(class string) budget.Criticality {
	c, err := budget.ParseCriticality(class)
	if err != nil {
		return budget.DefaultCriticality
	}
	return c
}

// withBudget protects the graph with budget: the edge fixes the deadline
// and the class, every hop reads both and passes them on; the middle's
// calls to the backend are admitted by an Op from measured latency and
// in-flight work, lower classes first; and the backend queues its work in a
// deadline-aware Queue, so that work that cannot finish in time is refused
// on arrival or dropped before it starts, rather than slowing every request
// down.
func withBudget(v *variant, p params) {
	procs := p.Procs
	// The edge trusts only the time left its user says it will wait
	// (Request-Timeout-Ms, which the load generator sends as the user's
	// own client would), never more than the budget; with nothing sent, the
	// request gets the whole budget.
	edge := &wire.Policy{Default: p.Budget, Max: p.Budget, Trust: wire.SourceRequestTimeout}
	classify := httpbudget.WithClassifier(func(r *http.Request) budget.Criticality {
		return criticalityOf(classOfPath(r.URL.Path))
	})
	v.serve = func(hop string, h http.Handler) http.Handler {
		if hop == "edge" {
			return httpbudget.NewHandler(h, httpbudget.WithPolicy(edge), classify)
		}
		return httpbudget.NewHandler(h)
	}
	v.transport = func(_ string, base http.RoundTripper) http.RoundTripper {
		return httpbudget.NewTransport(base)
	}
	v.classSeen = func(r *http.Request) string { return budget.CriticalityFrom(r.Context()).String() }
	op := &budget.Op{Name: "backend", Limit: budgetLimit(p)}
	v.call = func(ctx context.Context, hop string, send func(context.Context) (int, error)) (int, error) {
		if hop != "middle" {
			return send(ctx)
		}
		status := 0
		err := op.Do(ctx, func(ctx context.Context) error {
			var err error
			status, err = send(ctx)
			if err == nil && status >= 500 {
				err = fmt.Errorf("the backend answered %d", status)
			}
			return err
		})
		if status != 0 {
			return status, nil
		}
		return 0, err
	}
	v.fail = httpbudget.WriteError
	var workers sync.WaitGroup
	stop, cancel := context.WithCancel(context.Background())
	v.backend = func(arrive func(*http.Request) (context.Context, *entry), job func(context.Context, *entry) error) http.Handler {
		q := &budget.Queue[*queued]{Name: "cpu", MinUseful: p.Work, Target: budgetTarget(p), OnDrop: func(_ context.Context, j *queued, reason error) { j.done <- reason }}
		for range procs {
			workers.Go(func() {
				for {
					j, ctx, err := q.Get(stop)
					if err != nil {
						return
					}
					j.done <- job(ctx, j.e)
					// Let the process's other goroutines run between two
					// items: with the backend's one CPU, a worker that goes
					// straight on to the next item runs until the scheduler
					// preempts it (10 ms), and the answers of finished items
					// and the requests arriving wait behind it. Without
					// this, 3 % of the requests whose work the backend
					// started at 3x were answered too late (the work done
					// with 200 ms left, its answer stuck behind the next
					// items' work), and requests reached the queue with up
					// to 260 ms of their budget gone.
					runtime.Gosched()
				}
			})
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, e := arrive(r)
			j := &queued{e: e, done: make(chan error, 1)}
			if err := q.Put(ctx, j); err != nil {
				httpbudget.WriteError(w, err)
				return
			}
			select {
			case err := <-j.done:
				if err != nil {
					httpbudget.WriteError(w, err)
					return
				}
				_, _ = w.Write([]byte("ok"))
			case <-ctx.Done():
				httpbudget.WriteError(w, context.Cause(ctx))
			}
		})
	}
	v.close = func() { cancel(); workers.Wait() }
}

// queued is a request waiting in the backend's queue.
type queued struct {
	e    *entry
	done chan error // the work's outcome, or why the queue dropped it
}
