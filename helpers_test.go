package budget_test

import (
	"context"
	"sync"

	"github.com/timebudget/budget"
)

// hang is a dependency that never answers: it returns only when its context
// ends.
func hang(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// kinds returns the kinds of the ledger's events, in order, leaving out
// arrivals.
func kinds(l *budget.Ledger) []budget.EventKind {
	var out []budget.EventKind
	for _, ev := range l.Events() {
		if ev.Kind != budget.EventArrival {
			out = append(out, ev.Kind)
		}
	}
	return out
}

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []budget.Event
}

func (r *recorder) Observe(_ context.Context, ev budget.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorder) of(kind budget.EventKind) []budget.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []budget.Event
	for _, ev := range r.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}
