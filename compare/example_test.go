package compare_test

import (
	"context"
	"os"

	"github.com/timebudget/budget/compare"
)

// Scenario A through every strategy of the comparison. Run this way it takes
// twelve seconds of real time per strategy; inside a test, wrap each Run in
// synctest.Test and the same traffic takes fake time, a fraction of a second
// in all.
func Example() {
	s := compare.SlowThenRecovered(true)
	var results []compare.Result
	for _, st := range compare.Lineup() {
		results = append(results, s.Run(context.Background(), st))
	}
	_ = compare.WriteTable(os.Stdout, results)
}
