package budgettest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/timebudget/budget/budgettest"
)

// A handler that does not watch its context keeps working after its caller
// has left; the probe measures for how long.
func ExampleProbe() {
	probe := new(budgettest.Probe)
	careless := &budgettest.Dependency{Delay: 30 * time.Millisecond, IgnoreContext: true, Probe: probe}
	careful := &budgettest.Dependency{Delay: 30 * time.Millisecond, Probe: probe}

	for _, dep := range []*budgettest.Dependency{careless, careful} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		_ = dep.Call(ctx)
		cancel()
	}
	for _, r := range probe.Records() {
		fmt.Println("went on for 20ms or more after its caller left:", r.Orphaned() >= 20*time.Millisecond)
	}
	// Output:
	// went on for 20ms or more after its caller left: true
	// went on for 20ms or more after its caller left: false
}
