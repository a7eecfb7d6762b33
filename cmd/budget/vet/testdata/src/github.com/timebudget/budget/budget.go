// Package budget is a stand-in for the real package in analyzer tests.
package budget

import (
	"context"
	"time"
)

func Detach(parent context.Context, stage string, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(parent), d)
}

func Remaining(ctx context.Context) (time.Duration, bool) { return 0, false }

func Attempt(ctx context.Context, stage string, limit, minUseful time.Duration) (context.Context, context.CancelFunc, error) {
	c, cancel := context.WithTimeout(ctx, limit)
	return c, cancel, nil
}
