package retryexpired

import (
	"context"
	"errors"
	"time"
)

func call(ctx context.Context) error { return ctx.Err() }

func retries(ctx context.Context) error {
	var err error
	for i := 0; i < 3; i++ {
		err = call(ctx)
		if errors.Is(err, context.DeadlineExceeded) { // want `retrying on context.DeadlineExceeded without checking the caller's context`
			continue
		}
		return err
	}
	return err
}

func equal(ctx context.Context) error {
	for {
		err := call(ctx)
		if err == context.DeadlineExceeded || err == context.Canceled { // want `retrying on context.DeadlineExceeded`
			continue
		}
		return err
	}
}

func perAttempt(ctx context.Context) error {
	for range 3 {
		c, cancel := context.WithTimeout(ctx, time.Second)
		err := call(c)
		cancel()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded): // want `retrying on context.DeadlineExceeded`
			continue
		}
		return err
	}
	return nil
}

// Near misses: none of these is reported.

func checksParent(ctx context.Context) error {
	for range 3 {
		c, cancel := context.WithTimeout(ctx, time.Second)
		err := call(c)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			continue
		}
		return err
	}
	return nil
}

func negated(ctx context.Context) error {
	for i := 0; i < 3; i++ {
		err := call(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			continue
		}
		return err
	}
	return nil
}

func givesUp(ctx context.Context) error {
	for {
		err := call(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		if err == nil {
			return nil
		}
	}
}

func notALoop(ctx context.Context) error {
	err := call(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

func innerLoop(ctx context.Context, items []int) error {
	for range 3 {
		err := call(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			for range items {
				continue
			}
			return err
		}
	}
	return nil
}
