package budget_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/timebudget/budget"
)

func ExampleWithCriticality() {
	ctx := budget.WithCriticality(context.Background(), budget.Critical)
	fmt.Println(budget.CriticalityFrom(ctx))
	fmt.Println(budget.CriticalityFrom(context.Background()))
	c, err := budget.ParseCriticality("Sheddable")
	fmt.Println(c, err)
	_, err = budget.ParseCriticality("urgent")
	fmt.Println(err)
	// Output:
	// critical
	// default
	// sheddable <nil>
	// budget: unknown criticality "urgent": want "critical", "default" or "sheddable"
}

// An op with a Limit of 4 runs two sheddable attempts at most, three of
// the default class, and keeps the fourth slot for critical work.
func ExampleOp_BeginAt_criticality() {
	op := &budget.Op{Name: "payments", Limit: 4}
	now := time.Now()
	for _, c := range []budget.Criticality{budget.Sheddable, budget.Sheddable, budget.Sheddable,
		budget.DefaultCriticality, budget.DefaultCriticality, budget.Critical, budget.Critical} {
		dec := op.BeginAt(now, budget.Ask{Available: time.Second, Criticality: c})
		fmt.Println(c, dec.Admit, dec.Shed)
	}
	// Output:
	// sheddable true false
	// sheddable true false
	// sheddable false true
	// default true false
	// default false true
	// critical true false
	// critical false true
}

func ExampleOp_Do_limit() {
	op := &budget.Op{Name: "payments", Limit: 1}
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()
	_ = op.Do(budget.WithCriticality(ctx, budget.Sheddable), func(ctx context.Context) error {
		// One attempt in flight: a second, even critical, is shed.
		err := op.Do(budget.WithCriticality(ctx, budget.Critical), func(context.Context) error { return nil })
		fmt.Println(err, errors.Is(err, budget.ErrInsufficient))
		return nil
	})
	// Output:
	// budget: payments not started: shed under load for its criticality true
}
