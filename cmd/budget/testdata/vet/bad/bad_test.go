package bad

import (
	"context"
	"testing"
	"time"
)

// A test file makes the go command load bad twice (alone and with its
// tests); each finding must still be printed once.
func TestFetch(t *testing.T) {
	check := func(ctx context.Context) {
		c, cancel := context.WithTimeout(context.TODO(), time.Second)
		defer cancel()
		_ = c
	}
	check(t.Context())
}
