package budget_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

// errFull is what a dependency answers a call it refuses on arrival.
var errFull = errors.New("full")

// shedding is a dependency that refuses, on arrival and with nothing run,
// every call above its capacity in flight (none while capacity is 0 or
// less), and answers the others after latency.
type shedding struct {
	capacity atomic.Int64
	latency  time.Duration
	inflight atomic.Int64
}

func (s *shedding) serve(ctx context.Context) error {
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	if c := s.capacity.Load(); c > 0 && n > c {
		if err := sleepOrDone(ctx, s.latency/10); err != nil { // the round trip
			return err
		}
		return budget.DoNotRetry(errFull, budget.ServerRefused)
	}
	return sleepOrDone(ctx, s.latency)
}

// limitTally counts how the calls of a load ended, and when the last of each
// kind of refusal came back.
type limitTally struct {
	mu                            sync.Mutex
	ok, local, remote, other      int
	lastLocal, lastRemote, lastOK time.Time
}

func (t *limitTally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("%d answered, %d refused at home, %d by the dependency, %d otherwise", t.ok, t.local, t.remote, t.other)
}

func (t *limitTally) add(err error) {
	now := time.Now()
	var e *budget.Error
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err == nil:
		t.ok++
		t.lastOK = now
	case errors.As(err, &e) && e.Outcome == budget.OutcomeShed && errors.Is(err, budget.ErrInsufficient):
		t.local++
		t.lastLocal = now
	case errors.Is(err, errFull):
		t.remote++
		t.lastRemote = now
	default:
		t.other++
	}
}

// shedLoad runs workers callers of op against dep until the time is up: each
// makes one call with a budget of 50 latencies, then waits think.
func shedLoad(op *budget.Op, dep *shedding, workers int, think, d time.Duration) *limitTally {
	t := &limitTally{}
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				ctx, cancel := budget.Start(context.Background(), 50*dep.latency)
				t.add(op.Do(ctx, dep.serve))
				cancel()
				time.Sleep(think)
			}
		})
	}
	wg.Wait()
	return t
}

// An op with no Limit, calling a dependency that refuses calls above 8 in
// flight with 32 callers, learns a limit from the refusals and keeps the
// calls it would have had refused at home: shed locally, as a Limit sheds,
// with events and a regime that say so, while the dependency stays busy.
func TestLearnedLimitKeepsRefusedCallsHome(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		op := &budget.Op{Name: "dep", Observer: rec}
		dep := &shedding{latency: 10 * time.Millisecond}
		dep.capacity.Store(8)
		got := shedLoad(op, dep, 32, 2*time.Millisecond, 3*time.Second)
		capacity := 8 * int(3*time.Second/dep.latency)
		t.Logf("%v of a capacity of %d answers", got, capacity)
		if got.local == 0 || got.remote*10 > got.ok {
			t.Errorf("%d refused at home, %d by the dependency for %d answers: want the refusals kept home, under 1 in 10 answers sent to be refused", got.local, got.remote, got.ok)
		}
		if got.ok < capacity/2 {
			t.Errorf("%d answers of a capacity of %d: the learned limit starved the dependency", got.ok, capacity)
		}
		shed := 0
		for _, ev := range rec.of(budget.EventRefuse) {
			if ev.Outcome == budget.OutcomeShed {
				shed++
			}
		}
		if shed != got.local {
			t.Errorf("%d shed refusals observed, %d returned", shed, got.local)
		}
		if r, _ := op.RegimeAt(got.lastLocal); r != budget.RegimeShedding && r < budget.RegimeThrottling {
			t.Errorf("regime at the last local refusal: %v, want shedding (or worse)", r)
		}
	})
}

// The limit is learned from refusals only: an op with no Limit under high
// concurrency sheds nothing while its dependency refuses nothing, whether
// it is fast, slow or failing for other reasons; the same load against a
// dependency that refuses is shed.
func TestLimitIsLearnedFromRefusalsOnly(t *testing.T) {
	t.Parallel()
	failing := errors.New("boom")
	cases := []struct {
		name    string
		cap     int64
		latency time.Duration
		fail    error // returned instead of an answer, when not nil
		shed    bool
	}{
		{"fast", 0, time.Millisecond, nil, false},
		{"slow", 0, 50 * time.Millisecond, nil, false},
		{"failing after running", 0, 5 * time.Millisecond, budget.MarkSent(failing, budget.Executed), false},
		{"failing and asking not to retry", 0, 5 * time.Millisecond, budget.DoNotRetry(failing, budget.Executed), false},
		{"refusing above 16", 16, 5 * time.Millisecond, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				op := &budget.Op{Name: "dep", Throttle: -1} // no throttling: only a limit could refuse
				dep := &shedding{latency: tc.latency}
				dep.capacity.Store(tc.cap)
				got := &limitTally{}
				var wg sync.WaitGroup
				stop := time.Now().Add(time.Second)
				for range 64 {
					wg.Go(func() {
						for time.Now().Before(stop) {
							ctx, cancel := budget.Start(context.Background(), time.Second)
							got.add(op.Do(ctx, func(ctx context.Context) error {
								if err := dep.serve(ctx); err != nil || tc.fail == nil {
									return err
								}
								return tc.fail
							}))
							cancel()
							time.Sleep(2 * time.Millisecond)
						}
					})
				}
				wg.Wait()
				if (got.local > 0) != tc.shed {
					t.Errorf("%d calls shed at home (%v), want shedding %v", got.local, got, tc.shed)
				}
			})
		})
	}
}

// sentAs is an error type of another package that classifies itself.
type sentAs budget.Sent

func (s sentAs) Error() string     { return "classified " + budget.Sent(s).String() }
func (s sentAs) Sent() budget.Sent { return budget.Sent(s) }

// The op reads a refusal as the package classifies errors everywhere
// ([budget.SentOf]): marked ServerRefused by DoNotRetry or MarkSent, or by
// an error type's own Sent method, anywhere in the chain, the outermost
// classification winning. A refusal with 11 calls in flight (itself
// included) leaves a limit of 9, of which a default call gets 7: the next
// call, with 10 still in flight, is shed.
func TestLearnedLimitReadsRefusalsAsClassified(t *testing.T) {
	t.Parallel()
	errs := map[string]error{
		"DoNotRetry(ServerRefused)":          budget.DoNotRetry(errFull, budget.ServerRefused),
		"MarkSent(ServerRefused)":            budget.MarkSent(errFull, budget.ServerRefused),
		"own Sent method":                    sentAs(budget.ServerRefused),
		"wrapped":                            fmt.Errorf("calling: %w", budget.MarkSent(errFull, budget.ServerRefused)),
		"joined":                             errors.Join(errFull, budget.MarkSent(errFull, budget.ServerRefused)),
		"joined, executed first":             errors.Join(sentAs(budget.Executed), sentAs(budget.ServerRefused)),
		"executed over refused":              budget.MarkSent(budget.MarkSent(errFull, budget.ServerRefused), budget.Executed),
		"DoNotRetry(Executed)":               budget.DoNotRetry(errFull, budget.Executed),
		"MarkSent(NotSent)":                  budget.MarkSent(errFull, budget.NotSent),
		"MarkSent(MaybeExecuted)":            budget.MarkSent(errFull, budget.MaybeExecuted),
		"unclassified":                       errFull,
		"Permanent, unclassified":            budget.Permanent(errFull),
		"RetryAfter over ServerRefused":      budget.RetryAfter(budget.MarkSent(errFull, budget.ServerRefused), time.Second),
		"ServerRefused with a bad inner one": budget.MarkSent(sentAs(99), budget.ServerRefused),
		// The adapters' shed answers: httpbudget's "upstream refused:
		// budget spent" and grpcbudget's DEADLINE_EXCEEDED with the shed
		// trailer also match context.DeadlineExceeded, which makes the
		// attempt's outcome an expiry; they are refusals all the same.
		"ServerRefused over a deadline": budget.DoNotRetry(fmt.Errorf("upstream refused: %w", context.DeadlineExceeded), budget.ServerRefused),
	}
	for name, refusal := range errs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, ok := budget.SentOf(refusal)
			want := ok && s == budget.ServerRefused
			synctest.Test(t, func(t *testing.T) {
				op := &budget.Op{Name: "dep", Throttle: -1}
				ctx, cancel := budget.Start(context.Background(), time.Second)
				defer cancel()
				release := make(chan struct{})
				var wg sync.WaitGroup
				for range 10 {
					wg.Go(func() {
						_ = op.Do(ctx, func(context.Context) error { <-release; return nil })
					})
				}
				synctest.Wait() // ten calls in flight
				if err := op.Do(ctx, func(context.Context) error { return refusal }); !errors.Is(err, refusal) {
					t.Fatalf("the refused call returned %v", err)
				}
				err := op.Do(ctx, func(context.Context) error { return nil })
				close(release)
				wg.Wait()
				if shed := errors.Is(err, budget.ErrInsufficient); shed != want {
					t.Errorf("SentOf says %v, %v; the next call with 10 in flight returned %v, want shed %v", s, ok, err, want)
				}
			})
		})
	}
}

// Once the dependency stops refusing, the learned limit lets go within one
// estimator window of the last refusal the op saw, whatever the op's Prior
// and Window, the callers' concurrency and the dependency's capacity
// (generated, seeded): no call is shed for it later, and calls go again.
func TestLearnedLimitLetsGoWithinAWindow(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(32, 7))
	priors := []time.Duration{0, time.Millisecond, 10 * time.Millisecond, 200 * time.Millisecond}
	windows := []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, 2 * time.Second}
	for i := range 8 {
		prior, window := priors[r.IntN(len(priors))], windows[r.IntN(len(windows))]
		capacity := int64(1 + r.IntN(24))
		workers := int(capacity) + 2 + r.IntN(4*int(capacity)+8)
		latency := time.Duration(2+r.IntN(18)) * time.Millisecond
		name := fmt.Sprintf("%d/prior=%v,window=%v,cap=%d,workers=%d,latency=%v", i, prior, window, capacity, workers, latency)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				op := &budget.Op{Name: "dep", Prior: prior, Estimator: budget.Estimator{Window: window}}
				w := window
				if w == 0 {
					w = time.Second
				}
				dep := &shedding{latency: latency}
				dep.capacity.Store(capacity)
				fault := shedLoad(op, dep, workers, latency/4, 2*time.Second)
				if fault.local == 0 || fault.remote == 0 {
					t.Fatalf("during the fault: %v, want refusals by the dependency and at home", fault)
				}
				dep.capacity.Store(0) // the fault ends
				after := shedLoad(op, dep, workers, latency/4, 3*w+time.Second)
				last := fault.lastRemote
				if after.lastRemote.After(last) {
					last = after.lastRemote
				}
				if after.local > 0 && after.lastLocal.Sub(last) > w {
					t.Errorf("a call was shed for the learned limit %v after the last refusal, more than the window %v (%v)", after.lastLocal.Sub(last), w, after)
				}
				if after.ok == 0 || !after.lastOK.After(last.Add(w)) {
					t.Errorf("after the fault: %v; want answers once a window passed since the last refusal", after)
				}
			})
		})
	}
}
