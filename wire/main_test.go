package wire_test

import (
	"testing"

	"github.com/timebudget/budget/internal/leakcheck"
)

// The concurrency tests start goroutines: none may outlive the tests.
func TestMain(m *testing.M) { leakcheck.Main(m) }
