package pick

import (
	"testing"

	"github.com/timebudget/budget/internal/leakcheck"
)

// The simulations start callers: none may outlive the tests.
func TestMain(m *testing.M) { leakcheck.Main(m) }
