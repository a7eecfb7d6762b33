package bgdeadline

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/timebudget/budget"
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

func doWork(ctx context.Context) error { return ctx.Err() }

// A fresh context handed straight to a call loses the caller's deadline.

func workInHandler(w http.ResponseWriter, r *http.Request) {
	_ = doWork(context.Background()) // want `context.Background\(\) passed to doWork although r.Context\(\) is in scope`
}

func plainBackground(ctx context.Context) error {
	return call(context.Background()) // want `context.Background\(\) passed to call although ctx is in scope`
}

func plainTODO(ctx context.Context) error {
	return doWork((context.TODO())) // want `context.TODO\(\) passed to doWork although ctx`
}

func viaFuncValue(ctx context.Context, f func(context.Context) error) error {
	return f(context.Background()) // want `context.Background\(\) passed to f although ctx`
}

func literalWithCtx(w http.ResponseWriter, r *http.Request) {
	check := func(ctx context.Context) error {
		return doWork(context.Background()) // want `although ctx is in scope`
	}
	_ = check(r.Context())
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

// Work started to outlive the request, work after the caller has gone,
// and code without a context of its own may use a fresh context.

func goWork(w http.ResponseWriter, r *http.Request) {
	go doWork(context.Background())
	go func() {
		_ = doWork(context.Background())
	}()
}

func deferWork(ctx context.Context) {
	defer doWork(context.Background())
	defer func() { _ = doWork(context.TODO()) }()
}

func afterDone(ctx context.Context) error {
	<-ctx.Done()
	return doWork(context.Background())
}

func detached(ctx context.Context) error {
	c, cancel := budget.Detach(ctx, "audit", time.Second)
	defer cancel()
	return doWork(c)
}

func noCtxWork() error {
	return doWork(context.Background())
}

func init() {
	_ = doWork(context.Background())
}

func blankWork(_ context.Context) error {
	return doWork(context.Background())
}

func derivations(ctx context.Context) {
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	_ = context.WithValue(context.TODO(), key{}, 1)
	_ = c
}

type key struct{}

func notAContextParam(ctx context.Context, log func(...any)) {
	log(context.Background())
}

type conn struct{}

func (conn) Close(ctx context.Context) error { return nil }

// Cleanup must finish even when the caller's context has ended.
func closeAfter(ctx context.Context, c conn, srv *http.Server) {
	_ = c.Close(context.Background())
	_ = srv.Shutdown(context.Background())
}
