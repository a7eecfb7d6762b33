package demo

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind (the demo starts
// servers, clients and load generators) and removes the shared run's report
// directory.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		if sharedDir != "" {
			_ = os.RemoveAll(sharedDir)
		}
	}))
}
