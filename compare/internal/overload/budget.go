package overload

import (
	"context"
	"errors"
	"fmt"
	"github.com/timebudget/budget/edge"
	"net/http"
	"runtime"
	"strconv"
	"sync"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// The budget variant is untuned: it sets only what its user knows, the
// edge's policy (how long its users wait at most, and that it trusts what
// their client says is left) and the classifier (the route says the class).
// The backend's Queue keeps every sizing field at its default (Target,
// MinUseful and the rest): whatever sizing it needs it learns from what it
// measures. A test asserts it (TestBudgetVariantIsUntuned).
//
// The middle hop calls the backend with the deadline and class it was
// sent, and no Op: the backend's deadline-driven Queue admits what it can
// serve in time and refuses the rest at once, by deadline. An Op with its
// defaults in front of it was measured to refuse short-budget calls: its
// latency estimate mixes the calls of every budget, and behind a queue
// served by deadline, calls with 3 s wait far longer than calls with
// 100 ms, so a default-class call with 100 ms looked unlikely to finish
// (on the mixed workload at 3x, 15-19 % of the 100 ms group in budget with
// the Op, 18-30 % without it, in runs on a busy machine).

// budgetQueue is the backend's queue; onDrop answers a dropped item's
// caller.
func budgetQueue(onDrop func(context.Context, *queued, error)) *budget.Queue[*queued] {
	return &budget.Queue[*queued]{Name: "cpu", OnDrop: onDrop}
}

// budgetSetting says how the budget variant is configured.
func budgetSetting(p params) string {
	return fmt.Sprintf("untuned: httpbudget middleware on every hop (the edge: Default = Max = %v, the longest its users wait; trusts only the Request-Timeout-Ms its users' client sends; classifies by route) and Transport on every client; "+
		"no Op (the middle hop passes each call's deadline and class on); the edge's fan-out through budget.Gather (required branches, defaults); "+
		"the backend's work through a budget.Queue with defaults (no Target, no MinUseful) served by one worker per backend CPU",
		p.Budget)
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
// and the class, every hop reads both and passes them on; and the backend
// queues its work in a deadline-driven Queue, so that work that cannot
// finish in time is refused on arrival or dropped before it starts, rather
// than slowing every request down.
func withBudget(v *variant, p params) {
	procs := p.Procs
	// The edge trusts only the time left its user says it will wait
	// (Request-Timeout-Ms, which the load generator sends as the user's
	// own client would), never more than the budget; with nothing sent, the
	// request gets the whole budget.
	edgePolicy := &wire.Policy{Default: p.Budget, Max: p.Budget, Trust: wire.SourceRequestTimeout}
	classify := httpbudget.WithClassifier(func(r *http.Request) budget.Criticality {
		return criticalityOf(classOfPath(r.URL.Path))
	})
	v.serve = func(hop string, h http.Handler) http.Handler {
		if hop == "edge" {
			return httpbudget.NewHandler(h, edge.WithPolicy(edgePolicy), classify)
		}
		return httpbudget.NewHandler(h)
	}
	v.transport = func(_ string, base http.RoundTripper) http.RoundTripper {
		return httpbudget.NewTransport(base)
	}
	v.classSeen = func(r *http.Request) string { return budget.CriticalityFrom(r.Context()).String() }
	v.fail = httpbudget.WriteError
	v.gather = budgetGather
	var workers sync.WaitGroup
	stop, cancel := context.WithCancel(context.Background())
	v.backend = func(arrive func(*http.Request) (context.Context, *entry), job func(context.Context, *entry) error) http.Handler {
		q := budgetQueue(func(_ context.Context, j *queued, reason error) { j.done <- reason })
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

// statusError is a call answered with a status other than 200.
type statusError int

func (s statusError) Error() string { return fmt.Sprintf("answered %d", int(s)) }

// budgetGather makes the edge's calls at once through budget.Gather, every
// branch required and sharing the request's deadline.
func budgetGather(ctx context.Context, n int, one func(context.Context, string) (int, error)) (int, error) {
	g := &budget.Gather[int]{Stage: "fan-out"}
	for i := range n {
		part := strconv.Itoa(i)
		g.Branches = append(g.Branches, budget.Branch[int]{Name: "call " + part, Fn: func(ctx context.Context) (int, error) {
			status, err := one(ctx, part)
			if err == nil && status != http.StatusOK {
				err = statusError(status)
			}
			return status, err
		}})
	}
	if _, err := g.Do(ctx); err != nil {
		if s, ok := errors.AsType[statusError](err); ok {
			return int(s), nil
		}
		return 0, err
	}
	return http.StatusOK, nil
}
