package bgdeadline

import (
	"context"
	"testing"
)

// Tests choose their contexts on purpose: a fresh context passed to a call
// is not reported in a test file.
func helper(ctx context.Context) error {
	return doWork(context.Background())
}

func TestHelper(t *testing.T) { _ = helper(t.Context()) }
