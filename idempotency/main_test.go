package idempotency_test

import (
	"testing"

	"github.com/timebudget/budget/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
