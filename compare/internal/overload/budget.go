package overload

import (
	"os"
	"math/rand/v2"
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// budgetSetting says how the budget variant is configured.
var budgetSetting = fmt.Sprintf("httpbudget middleware on every hop (the edge: Default = Max = %v, trusts no client header) and Transport on every client; an Op (defaults) around each call to the next hop; the backend's work goes through a budget.Queue (MinUseful = the work's CPU time, other fields default) served by one worker per backend CPU", defaultBudget)

const defaultBudget = 300 * time.Millisecond

// withBudget protects the graph with budget: the edge fixes the deadline,
// every hop reads it and passes the time left on; each call to the next hop
// is admitted by an Op from measured latency; and the backend queues its
// work in a deadline-aware Queue, so that work that cannot finish in time is
// refused on arrival or dropped before it starts, rather than slowing every
// request down.
func withBudget(v *variant, procs int, workTime time.Duration) {
	edge := &wire.Policy{Default: defaultBudget, Max: defaultBudget, Trust: wire.SourcesNone}
	v.serve = func(hop string, h http.Handler) http.Handler {
		if hop == "edge" {
			return httpbudget.NewHandler(h, httpbudget.WithPolicy(edge))
		}
		return httpbudget.NewHandler(h)
	}
	v.transport = func(_ string, base http.RoundTripper) http.RoundTripper {
		return httpbudget.NewTransport(base)
	}
	ops := map[string]*budget.Op{"edge": {Name: "middle"}, "middle": {Name: "backend"}}
	v.call = func(ctx context.Context, hop string, send func(context.Context) (int, error)) (int, error) {
		status := 0
		mode := os.Getenv("OVOPS")
		if mode == "none" || mode == "middle" && hop == "edge" {
			st, err := send(ctx)
			if err == nil && st >= 500 {
				return st, nil
			}
			return st, err
		}
		err := ops[hop].Do(ctx, func(ctx context.Context) error {
			var err error
			status, err = send(ctx)
			if err == nil && status >= 500 {
				err = fmt.Errorf("answered %d", status)
			}
			return err
		})
		if status != 0 {
			return status, nil
		}
		return 0, err
	}
	v.fail = func(w http.ResponseWriter, err error) {
		if os.Getenv("OVDEBUG") != "" && rand.IntN(50) == 0 {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
		}
		httpbudget.WriteError(w, err)
	}
	var workers sync.WaitGroup
	stop, cancel := context.WithCancel(context.Background())
	v.backend = func(arrive func(*http.Request) (context.Context, *entry), job func(context.Context, *entry) error) http.Handler {
		q := &budget.Queue[*queued]{Name: "cpu", MinUseful: workTime, OnDrop: func(_ context.Context, j *queued, reason error) { j.done <- reason }}
		for range procs {
			workers.Go(func() {
				for {
					j, ctx, err := q.Get(stop)
					if err != nil {
						return
					}
					j.done <- job(ctx, j.e)
				}
			})
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, e := arrive(r)
			j := &queued{e: e, done: make(chan error, 1)}
			if err := q.Put(ctx, j); err != nil {
				if os.Getenv("OVDEBUG") != "" && rand.IntN(50) == 0 {
					fmt.Fprintln(os.Stderr, "PUT:", err, q.Stats())
				}
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
