package budget_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/timebudget/budget"
)

// A client marks an answer that asks for no retry with DoNotRetry: Retry
// makes no second attempt. A server asks GaveUp whether its own Retry gave
// up, to tell its caller not to retry either.
func ExampleDoNotRetry() {
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()
	op := &budget.Op{Name: "pay"}
	calls := 0
	err := (&budget.Retry{}).Do(ctx, op, func(context.Context) error {
		calls++
		// As an adapter reports a 503 carrying Budget-No-Retry: shed.
		return budget.DoNotRetry(errors.New("pay answered 503"), budget.ServerRefused)
	})
	sent, _ := budget.SentOf(err)
	fmt.Println(calls, sent, budget.GaveUp(err))
	fmt.Println(err)
	// Output:
	// 1 server_refused true
	// pay answered 503 (not retried: the server refused it on arrival and asked not to retry)
}

// A Retry that made all its attempts gave up: a server answering its error
// tells its caller not to retry (httpbudget's WriteError does).
func ExampleGaveUp() {
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()
	err := (&budget.Retry{MaxAttempts: 2, Backoff: -1}).Do(ctx, &budget.Op{Name: "db"}, func(context.Context) error {
		return errors.New("db down")
	})
	fmt.Println(err, budget.GaveUp(err), budget.GaveUp(errors.New("other")))
	// Output: db down true false
}
