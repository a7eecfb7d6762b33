package bgdeadline

import (
	"context"
	"errors"
	"net/http"
	"time"
)

func call(ctx context.Context) error { return ctx.Err() }

func withCtx(ctx context.Context) error {
	c, cancel := context.WithTimeout(context.Background(), time.Second) // want `context.WithTimeout derived from context.Background\(\) although ctx is in scope`
	defer cancel()
	return call(c)
}

func todoDeadline(ctx context.Context, at time.Time) error {
	c, cancel := context.WithDeadline(context.TODO(), at) // want `context.WithDeadline derived from context.TODO\(\) although ctx`
	defer cancel()
	return call(c)
}

func cause(ctx context.Context) error {
	c, cancel := context.WithTimeoutCause(context.Background(), time.Second, errors.New("slow")) // want `context.WithTimeoutCause derived from context.Background\(\)`
	defer cancel()
	return call(c)
}

func handler(w http.ResponseWriter, r *http.Request) {
	c, cancel := context.WithTimeout(context.Background(), time.Second) // want `although r.Context\(\) is in scope`
	defer cancel()
	_ = call(c)
}

func closure(ctx context.Context) {
	go func() {
		c, cancel := context.WithTimeout(context.Background(), time.Second) // want `although ctx is in scope`
		defer cancel()
		_ = call(c)
	}()
}

func shadowed(ctx context.Context) {
	{
		ctx := 3
		_ = ctx
		c, cancel := context.WithTimeout(context.Background(), time.Second) // want `although ctx is in scope`
		defer cancel()
		_ = call(c)
	}
}

// Near misses: none of these is reported.

func noCtx() error {
	c, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return call(c)
}

func fromCtx(ctx context.Context) error {
	c, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return call(c)
}

func blank(_ context.Context) error {
	c, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return call(c)
}

func shutdown(ctx context.Context, srv *http.Server) error {
	<-ctx.Done()
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(c)
}

func shutdownSelect(ctx context.Context, srv *http.Server, errc chan error) error {
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(c)
}

func plainBackground(ctx context.Context) error {
	return call(context.Background())
}

// From slack-go's examples: cleanup in a deferred function needs a context
// that outlives the caller's.
func cleanup(ctx context.Context) (err error) {
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = errors.Join(err, call(c))
	}()
	return call(ctx)
}
