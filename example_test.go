package budget_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/timebudget/budget"
)

// A request gets one budget at the edge; everything below reads what is left.
func ExampleStart() {
	ctx, cancel := budget.Start(context.Background(), 3*time.Second)
	defer cancel()

	// Hold back time to write the response.
	ctx = budget.WithReserve(ctx, 500*time.Millisecond)

	left, _ := budget.Remaining(ctx)
	avail, _ := budget.Available(ctx)
	fmt.Println("remaining:", left.Round(100*time.Millisecond))
	fmt.Println("available for work:", avail.Round(100*time.Millisecond))
	// Output:
	// remaining: 3s
	// available for work: 2.5s
}

// An Op refuses a call that cannot finish in the time left, before it starts,
// so a cheaper fallback can answer instead.
func ExampleOp_Do() {
	geometry := &budget.Op{Name: "geometry", Prior: time.Second}

	ctx, cancel := budget.Start(context.Background(), 200*time.Millisecond)
	defer cancel()

	err := geometry.Do(ctx, func(ctx context.Context) error {
		fmt.Println("never printed: 200ms cannot fit a call that needs 1s")
		return nil
	})
	fmt.Println(err)
	fmt.Println("refused before starting:", errors.Is(err, budget.ErrInsufficient))
	fmt.Println("an expiry:", errors.Is(err, context.DeadlineExceeded))
	// Output:
	// budget: geometry not started: too little time left
	// refused before starting: true
	// an expiry: false
}

// The ledger says where a request's budget went.
func ExampleLedger() {
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()

	resolve := &budget.Op{Name: "resolve"}
	geometry := &budget.Op{Name: "geometry", Prior: 5 * time.Second}
	_ = resolve.Do(ctx, func(context.Context) error { return nil })
	_ = geometry.Do(ctx, func(context.Context) error { return nil })

	for _, ev := range budget.LedgerFrom(ctx).Events() {
		line := ev.Kind.String() + " " + ev.Stage
		if ev.Outcome != budget.OutcomeNone {
			line += " " + ev.Outcome.String()
		}
		fmt.Println(line)
	}
	// Output:
	// arrival request
	// attempt resolve ok
	// refuse geometry insufficient
}
