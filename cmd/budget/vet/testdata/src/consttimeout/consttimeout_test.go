package consttimeout

import (
	"context"
	"testing"
	"time"
)

func TestEventually(t *testing.T) {
	ctx := context.Background()
	check := func(ctx context.Context) {
		_ = query("select 1", 30*time.Second)
	}
	check(ctx)
}
