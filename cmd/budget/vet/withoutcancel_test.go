package vet_test

import (
	"testing"

	"github.com/timebudget/budget/cmd/budget/vet"
	"golang.org/x/tools/go/analysis/analysistest"
)

func TestWithoutCancel(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), vet.WithoutCancel, "withoutcancel")
}
