package budgettest_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget/budgettest"
)

const ms = time.Millisecond

var errDown = errors.New("down")

func TestDependency(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		dep     *budgettest.Dependency
		want    error
		elapsed time.Duration
	}{
		{"fast", &budgettest.Dependency{}, nil, 0},
		{"slow, in time", &budgettest.Dependency{Delay: 40 * ms}, nil, 40 * ms},
		{"slow, past the deadline", &budgettest.Dependency{Delay: 300 * ms}, context.DeadlineExceeded, 100 * ms},
		{"failing", &budgettest.Dependency{Delay: 10 * ms, Err: errDown}, errDown, 10 * ms},
		{"hanging", &budgettest.Dependency{Hang: true}, context.DeadlineExceeded, 100 * ms},
		{"ignoring its context", &budgettest.Dependency{Delay: 300 * ms, IgnoreContext: true}, context.DeadlineExceeded, 300 * ms},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 100*ms)
				defer cancel()
				start := time.Now()
				err := tc.dep.Call(ctx)
				if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				if got := time.Since(start); got != tc.elapsed {
					t.Fatalf("the call took %v, want %v", got, tc.elapsed)
				}
				if tc.dep.Calls() != 1 {
					t.Fatalf("Calls() = %d", tc.dep.Calls())
				}
			})
		})
	}
}

func TestProbeMeasuresOrphanedWork(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		dep      *budgettest.Dependency
		cancelAt time.Duration // when the caller cancels; 0 leaves it to the 100ms deadline
		gaveUp   bool
		orphaned time.Duration
		past     time.Duration
	}{
		{"stops at the deadline", &budgettest.Dependency{Hang: true}, 0, true, 0, 0},
		{"finishes first", &budgettest.Dependency{Delay: 30 * ms}, 0, false, 0, -70 * ms},
		{"runs on past the deadline", &budgettest.Dependency{Delay: 160 * ms, IgnoreContext: true}, 0, true, 60 * ms, 60 * ms},
		{"runs on after a cancellation", &budgettest.Dependency{Delay: 90 * ms, IgnoreContext: true}, 20 * ms, true, 70 * ms, -10 * ms},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				probe := new(budgettest.Probe)
				tc.dep.Probe = probe
				ctx, cancel := context.WithTimeout(context.Background(), 100*ms)
				defer cancel()
				if tc.cancelAt > 0 {
					time.AfterFunc(tc.cancelAt, cancel)
				}
				start := time.Now()
				_ = tc.dep.Call(ctx)
				recs := probe.Records()
				if len(recs) != 1 || probe.Running() != 0 {
					t.Fatalf("%d records, %d running", len(recs), probe.Running())
				}
				r := recs[0]
				if !r.Start.Equal(start) || !r.Deadline.Equal(start.Add(100*ms)) {
					t.Fatalf("start %v deadline %v", r.Start.Sub(start), r.Deadline.Sub(start))
				}
				if !r.GaveUp.IsZero() != tc.gaveUp {
					t.Fatalf("GaveUp = %v, want set: %v", r.GaveUp, tc.gaveUp)
				}
				if got := r.Orphaned(); got != tc.orphaned {
					t.Fatalf("Orphaned() = %v, want %v", got, tc.orphaned)
				}
				if got, ok := r.PastDeadline(); !ok || got != tc.past {
					t.Fatalf("PastDeadline() = %v %v, want %v", got, ok, tc.past)
				}
				if n := len(probe.Orphaned()); n != map[bool]int{true: 1, false: 0}[tc.gaveUp] {
					t.Fatalf("Orphaned() has %d samples", n)
				}
			})
		})
	}
}

func TestProbeWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		probe := new(budgettest.Probe)
		if err := probe.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		dep := &budgettest.Dependency{Delay: 50 * ms, IgnoreContext: true, Probe: probe}
		for range 3 {
			go func() { _ = dep.Call(context.Background()) }()
		}
		synctest.Wait()
		if probe.Running() != 3 {
			t.Fatalf("Running() = %d", probe.Running())
		}
		short, cancel := context.WithTimeout(context.Background(), 10*ms)
		defer cancel()
		if err := probe.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait with work running: %v", err)
		}
		start := time.Now()
		if err := probe.Wait(context.Background()); err != nil || time.Since(start) != 40*ms {
			t.Fatalf("Wait returned %v after %v", err, time.Since(start))
		}
		if len(probe.Records()) != 3 {
			t.Fatalf("%d records", len(probe.Records()))
		}
	})
}

// Over a real connection: the client hangs up when its deadline passes, and
// the handler's context, canceled by net/http, ends the work.
func TestDependencyOverHTTP(t *testing.T) {
	t.Parallel()
	probe := new(budgettest.Probe)
	srv := httptest.NewServer(&budgettest.Dependency{Hang: true, Probe: probe})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*ms)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if _, err := srv.Client().Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer wcancel()
	for len(probe.Records()) == 0 && wctx.Err() == nil {
		time.Sleep(ms)
	}
	if err := probe.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	recs := probe.Records()
	if len(recs) != 1 || recs[0].GaveUp.IsZero() || !recs[0].Deadline.IsZero() {
		t.Fatalf("records %+v: want one whose caller gave up, without a deadline", recs)
	}
	if o := recs[0].Orphaned(); o > 50*ms {
		t.Fatalf("the work went on %v after the client hung up", o)
	}

	for _, tc := range []struct {
		dep  *budgettest.Dependency
		code int
	}{{&budgettest.Dependency{}, 200}, {&budgettest.Dependency{Err: errDown}, 503}} {
		rec := httptest.NewRecorder()
		tc.dep.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != tc.code {
			t.Errorf("status %d, want %d", rec.Code, tc.code)
		}
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	s := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	cases := map[float64]time.Duration{-1: 1, 0: 1, 0.1: 1, 0.5: 5, 0.55: 6, 0.9: 9, 0.99: 10, 1: 10, 2: 10}
	for q, want := range cases {
		if got := budgettest.Quantile(s, q); got != want {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if budgettest.Quantile(nil, 0.5) != 0 {
		t.Error("Quantile of nothing is not zero")
	}
	if s[0] != 5 {
		t.Error("Quantile sorted its argument")
	}
}
