package budgettest

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"
)

// Dependency is a fake downstream dependency for tests. Each call works for
// Delay and then returns Err (nil is success); with Hang it never answers and
// returns only when its context is done. Set the fields before the first
// call and do not change them afterwards; use two Dependencies for two
// behaviours. A Dependency is safe for concurrent use and must not be copied
// after first use.
type Dependency struct {
	// Delay is how long each call works before it answers. A call returns
	// early, with its context's error, when its context is done first,
	// unless IgnoreContext is set.
	Delay time.Duration

	// Hang makes every call wait until its context is done and return the
	// context's error: a dependency that never answers, which only a
	// deadline or a cancellation ends. Delay, Err and IgnoreContext do not
	// apply. A call without a deadline or cancellation hangs forever.
	Hang bool

	// Err is what a call that worked its full Delay returns; nil means
	// success.
	Err error

	// IgnoreContext makes a call work its full Delay even when its context
	// is done meanwhile: the common bug of work that does not watch its
	// context, which a [Probe] shows as orphaned work. The call still returns
	// the context's error when the context was done.
	IgnoreContext bool

	// Probe, when not nil, tracks every call, so a test can see how long
	// calls went on after their callers gave up.
	Probe *Probe

	calls atomic.Int64
}

// Call makes one call to the dependency within ctx. A nil ctx is a caller
// that never gives up, as context.Background. Call on a nil *Dependency
// returns an error saying so.
func (d *Dependency) Call(ctx context.Context) error {
	if d == nil {
		return errNilDependency
	}
	if ctx == nil {
		ctx = context.Background()
	}
	d.calls.Add(1)
	if d.Probe != nil {
		defer d.Probe.Track(ctx)()
	}
	if d.Hang {
		<-ctx.Done()
		return ctx.Err()
	}
	if d.Delay > 0 {
		t := time.NewTimer(d.Delay)
		defer t.Stop()
		if d.IgnoreContext {
			<-t.C
		} else {
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.Err
}

// Calls returns how many calls have been made; zero for a nil *Dependency.
func (d *Dependency) Calls() int64 {
	if d == nil {
		return 0
	}
	return d.calls.Load()
}

var errNilDependency = errors.New("budgettest: Call on a nil *Dependency")

// ServeHTTP makes the dependency an HTTP server: each request is one call
// within the request's context, which net/http cancels when the client's
// connection closes, so a Probe sees a caller that hangs up as giving up.
// It answers 200 on success, 503 Service Unavailable when the call returned
// Err, and 504 Gateway Timeout when the request's context ended first.
func (d *Dependency) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	err := d.Call(r.Context())
	switch {
	case err == nil:
		w.WriteHeader(http.StatusOK)
	case r.Context().Err() != nil:
		w.WriteHeader(http.StatusGatewayTimeout)
	default:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	}
}
