package budget_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/timebudget/budget"
)

// The README's first code block, kept compiling and running.
var readmeGeometry = &budget.Op{Name: "geometry", Prior: time.Second}

func Example_readme() {
	ctx, cancel := budget.Start(context.Background(), 200*time.Millisecond)
	defer cancel()

	err := readmeGeometry.Do(ctx, func(ctx context.Context) error {
		return nil
	})
	if errors.Is(err, budget.ErrInsufficient) {
		fmt.Println("answer from the cache instead:", err)
	}
	// The ledger's timings vary; print its first line only.
	fmt.Println(strings.SplitN(budget.LedgerFrom(ctx).String(), "\n", 2)[0])
	// Output:
	// answer from the cache instead: budget: geometry not started: too little time left
	// budget 200.0ms
}
