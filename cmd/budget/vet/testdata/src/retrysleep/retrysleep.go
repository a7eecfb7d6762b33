package retrysleep

import (
	"context"
	"errors"
	"time"
)

func call(ctx context.Context) error { return errors.New("unavailable") }

func sleepy(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = call(ctx); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond) // want `time.Sleep in a retry loop that never checks ctx`
	}
	return err
}

func forever(ctx context.Context) {
	for {
		err := call(ctx)
		if err != nil {
			<-time.After(time.Second) // want `<-time.After in a retry loop that never checks ctx`
			continue
		}
		return
	}
}

func timer(ctx context.Context) error {
	t := time.NewTimer(time.Second)
	for range 3 {
		if err := call(ctx); !errors.Is(err, context.Canceled) {
			return err
		}
		t.Reset(time.Second)
		<-t.C // want `a timer wait in a retry loop`
	}
	return nil
}

func selectWithoutCtx(ctx context.Context, stop chan struct{}) error {
	for {
		err := call(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-stop:
			return err
		case <-time.After(time.Second): // want `<-time.After in a retry loop`
		}
	}
}

// Near misses: none of these is reported.

func selectCtx(ctx context.Context) error {
	for {
		err := call(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func checksErr(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := call(ctx); err == nil {
			return nil
		}
		time.Sleep(time.Second)
	}
	return ctx.Err()
}

func checksDeadline(ctx context.Context, deadline time.Time) error {
	for {
		if err := call(ctx); err == nil {
			return nil
		}
		if time.Until(deadline) < time.Second {
			return errors.New("out of time")
		}
		time.Sleep(time.Second)
	}
}

func noCtx() error {
	for i := 0; i < 3; i++ {
		if err := call(context.Background()); err == nil {
			return nil
		}
		time.Sleep(time.Second)
	}
	return nil
}

func tick(ctx context.Context, work func()) {
	for {
		work()
		time.Sleep(time.Second)
	}
}

func goroutine(ctx context.Context) {
	for i := 0; i < 3; i++ {
		if err := call(ctx); err != nil {
			continue
		}
		go func() { time.Sleep(time.Second) }()
	}
}

func outside(ctx context.Context) error {
	time.Sleep(time.Second)
	return call(ctx)
}

// From vault's RemountWithContext: a poll loop that leaves on every error;
// the call fails as soon as ctx is done, so the loop ends with it.
func pollState(ctx context.Context) error {
	for {
		err := call(ctx)
		if err != nil {
			return err
		}
		time.Sleep(time.Second)
	}
}

func retryOnFailure(ctx context.Context) {
	for {
		if err := call(ctx); err != nil {
			println(err.Error())
		}
		time.Sleep(time.Second) // want `time.Sleep in a retry loop`
	}
}
