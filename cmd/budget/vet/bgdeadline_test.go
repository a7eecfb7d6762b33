package vet_test

import (
	"testing"

	"github.com/timebudget/budget/cmd/budget/vet"
	"golang.org/x/tools/go/analysis/analysistest"
)

func TestBgDeadline(t *testing.T) {
	t.Parallel()
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), vet.BgDeadline, "bgdeadline")
}
