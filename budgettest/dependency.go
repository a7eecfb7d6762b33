package budgettest

import (
	"context"
	"errors"
	"net/http"
	"sync"
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

	// Latency, when not nil, returns how long the next call works, in place
	// of Delay: a fault that starts part-way through a run, a latency that
	// varies from call to call. A negative value makes that call hang, as
	// with Hang. It is called once per call, from the calling goroutine, so
	// it must be safe for concurrent use when the Dependency is.
	Latency func() time.Duration

	// Detached hands each call's work to a goroutine that does not see the
	// call's cancellation, as a worker pool, a card processor or a database
	// without a statement timeout does: the call returns its context's error
	// as soon as its context is done, while the work goes on until it has
	// worked its time or until the deadline the call's context had when the
	// call started (a deadline handed over with the work, which is what
	// budget headers make possible), whichever comes first; with
	// IgnoreContext it ignores that deadline too. A Probe sees how long the
	// work went on after the caller gave up. Call Close to end work still
	// running when a test is done.
	Detached bool

	// Probe, when not nil, tracks every call, so a test can see how long
	// calls went on after their callers gave up.
	Probe *Probe

	calls     atomic.Int64
	stopOnce  sync.Once
	closeOnce sync.Once
	stop      chan struct{} // closed by Close; ends detached work
	work      sync.WaitGroup
}

// Call makes one call to the dependency within ctx. A nil ctx is a caller
// that never gives up, as context.Background. Call on a nil *Dependency
// returns an error saying so.
func (d *Dependency) Call(ctx context.Context) error { return d.CallFor(ctx, ctx) }

// CallFor is Call made on behalf of the request whose context is caller:
// the Probe tracks caller instead of ctx, so it sees when that request's
// user gave up even when the code under test cut the call's context off
// from the request (context.WithTimeout(context.Background(), t), the common
// bug). Everything else is as Call: ctx bounds the call. A nil ctx or caller
// is context.Background.
func (d *Dependency) CallFor(ctx, caller context.Context) error {
	if d == nil {
		return errNilDependency
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if caller == nil {
		caller = ctx
	}
	d.calls.Add(1)
	delay, hang := d.Delay, d.Hang
	if d.Latency != nil && !hang {
		delay = d.Latency()
		hang = delay < 0
	}
	if d.Detached {
		return d.detached(ctx, caller, delay, hang)
	}
	if d.Probe != nil {
		defer d.Probe.Track(caller)()
	}
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	if delay > 0 {
		t := time.NewTimer(delay)
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

// detached runs one call's work in a goroutine of its own that sees only the
// deadline ctx had at the start, and returns when the work ends or ctx is
// done, whichever comes first. The Probe tracks caller.
func (d *Dependency) detached(ctx, caller context.Context, delay time.Duration, hang bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// The work's own context: no cancellation from the caller, only the
	// deadline handed over at the start.
	wctx, cancel := context.WithoutCancel(ctx), context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok && !d.IgnoreContext {
		wctx, cancel = context.WithDeadline(wctx, dl)
	}
	var stopTrack func() Record
	if d.Probe != nil {
		stopTrack = d.Probe.Track(caller)
	}
	stop := d.stopChan()
	finished := make(chan error, 1)
	d.work.Add(1)
	go func() {
		defer d.work.Done()
		defer cancel()
		var timer <-chan time.Time
		if !hang {
			t := time.NewTimer(delay)
			defer t.Stop()
			timer = t.C
		}
		var err error
		select {
		case <-timer:
			err = d.Err
		case <-wctx.Done():
			err = wctx.Err()
		case <-stop:
			err = ErrClosed
		}
		if stopTrack != nil {
			stopTrack()
		}
		finished <- err
	}()
	select {
	case err := <-finished:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ErrClosed is what a detached call returns when Close ended its work.
var ErrClosed = errors.New("budgettest: dependency closed")

func (d *Dependency) stopChan() chan struct{} {
	d.stopOnce.Do(func() { d.stop = make(chan struct{}) })
	return d.stop
}

// Close ends the Detached work still running, hung work included, and waits
// for it to stop; the Probe records it as stopped now. Calls made after
// Close end at once with ErrClosed unless they finish first. Close is safe
// to call more than once and concurrently with calls; a Dependency without
// Detached has nothing to end, and neither has a nil *Dependency.
func (d *Dependency) Close() {
	if d == nil {
		return
	}
	stop := d.stopChan()
	d.closeOnce.Do(func() { close(stop) })
	d.work.Wait()
}

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
