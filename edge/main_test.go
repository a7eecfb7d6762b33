package edge_test

import (
	"testing"

	"github.com/timebudget/budget/internal/leakcheck"
)

// Budgets start timers: none may outlive the tests.
func TestMain(m *testing.M) { leakcheck.Main(m) }
