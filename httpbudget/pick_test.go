package httpbudget_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
)

// slowable is a replica whose answers take its delay, counting the requests
// it receives; with a status set, it answers every request at once with it.
type slowable struct {
	delay  atomic.Int64
	status atomic.Int64
	calls  atomic.Int64
	srv    *httptest.Server
}

func newSlowable(t *testing.T, d time.Duration) *slowable {
	s := &slowable{}
	s.delay.Store(int64(d))
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		if code := s.status.Load(); code != 0 {
			w.WriteHeader(int(code))
			return
		}
		select {
		case <-time.After(time.Duration(s.delay.Load())):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

type pickEvents struct {
	mu    sync.Mutex
	kinds map[string]int // kind + " " + stage
}

func (e *pickEvents) Observe(_ context.Context, ev budget.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.kinds[ev.Kind.String()+" "+ev.Stage]++
}

func (e *pickEvents) count(kind budget.EventKind, url string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.kinds[kind.String()+" httpbudget "+url]
}

// requests sends n requests from 16 workers through p, every other one with
// a tight budget, and returns how many each replica received.
func requests(t *testing.T, p *httpbudget.Picker, reps []*slowable, client *http.Client, n int) []int64 {
	t.Helper()
	before := make([]int64, len(reps))
	for i, r := range reps {
		before[i] = r.calls.Load()
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				b := 2 * time.Second
				if i%2 == 0 {
					b = 80 * time.Millisecond
				}
				ctx, cancel := context.WithTimeout(context.Background(), b)
				base, done := p.Pick(ctx)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
				resp, err := client.Do(req)
				done(resp, err)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode >= 500 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					failed.Add(1)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d requests failed other than by their deadline", f)
	}
	got := make([]int64, len(reps))
	for i, r := range reps {
		got[i] = r.calls.Load() - before[i]
	}
	return got
}

func TestPickerAvoidsSlowReplicaAndSeesRecovery(t *testing.T) {
	// Latencies well above a busy machine's pauses, so that noise does not
	// eject a fast replica.
	const fast, slow = 10 * time.Millisecond, 200 * time.Millisecond
	reps := []*slowable{newSlowable(t, fast), newSlowable(t, fast), newSlowable(t, fast)}
	var urls []string
	for _, r := range reps {
		urls = append(urls, r.srv.URL)
	}
	events := &pickEvents{kinds: map[string]int{}}
	p, err := httpbudget.NewPicker(urls, events)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()

	requests(t, p, reps, client, 300)
	reps[0].delay.Store(int64(slow))
	requests(t, p, reps, client, 200)
	got := requests(t, p, reps, client, 1500)
	total := got[0] + got[1] + got[2]
	t.Logf("while replica 0 is slow: %v", got)
	if share := float64(got[0]) / float64(total); share > 0.10 || got[0] == 0 {
		t.Errorf("the slow replica received %d of %d requests, want some probes and at most 10 %%", got[0], total)
	}
	if events.count(budget.EventEject, urls[0]) == 0 {
		t.Error("no ejection event for the slow replica")
	}
	reps[0].delay.Store(int64(fast))
	requests(t, p, reps, client, 2500)
	got = requests(t, p, reps, client, 1200)
	total = got[0] + got[1] + got[2]
	t.Logf("after recovery: %v", got)
	if share := float64(got[0]) / float64(total); share < 0.12 {
		t.Errorf("the recovered replica received %.1f %% of requests, want at least 12 %% (a fair share is 33 %%, probes 1 %%)", 100*share)
	}
	if events.count(budget.EventRecover, urls[0]) == 0 {
		t.Error("no recovery event for the recovered replica")
	}
}

func TestNewPickerRefusesBadURLs(t *testing.T) {
	for _, urls := range [][]string{nil, {"localhost:80"}, {"ftp://x"}, {"http://a", "http://a"}, {"http://a/%zz"}} {
		if _, err := httpbudget.NewPicker(urls, nil); err == nil || !strings.Contains(err.Error(), "NewPicker") {
			t.Errorf("NewPicker(%q) = %v, want an error naming NewPicker", urls, err)
		}
	}
	var p *httpbudget.Picker
	if base, done := p.Pick(context.Background()); base != "" {
		t.Errorf("a nil Picker picked %q", base)
	} else {
		done(nil, nil)
	}
}

// A pick and its done cost two allocations (the done function and its
// once-only flag), whatever the number of replicas.
func TestPickerAllocs(t *testing.T) {
	p, err := httpbudget.NewPicker([]string{"http://a", "http://b", "http://c"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if n := testing.AllocsPerRun(1000, func() {
		_, done := p.Pick(ctx)
		done(nil, nil)
	}); n > 2 {
		t.Errorf("Pick and done allocate %v times, want at most 2", n)
	}
}

func ExamplePicker() {
	p, err := httpbudget.NewPicker([]string{"http://10.0.0.1:8080", "http://10.0.0.2:8080"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	base, done := p.Pick(ctx) // a replica likely to answer within 200 ms
	fmt.Println(strings.HasPrefix(base, "http://10.0.0."))
	// ... send the request to base + path, then report how it ended, with
	// what the client returned (a 429 or a 503 is a failure of the replica):
	//
	//	resp, err := client.Do(req)
	//	done(resp, err)
	done(&http.Response{StatusCode: http.StatusOK}, nil)
	// Output: true
}

// A replica that answers every request at once with 429 or 503 (it sheds)
// is never taken for the fastest: it gets at most 5 % of the requests, at
// most 10 % of them fail, the healthy replicas are not ejected, and once it
// answers again it gets its share back.
func TestPickerFastFailingReplica(t *testing.T) {
	for _, code := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			// Latencies well above a busy machine's pauses, so that noise ejects
			// no healthy replica.
			reps := []*slowable{newSlowable(t, 10*time.Millisecond), newSlowable(t, 10*time.Millisecond), newSlowable(t, 10*time.Millisecond)}
			var urls []string
			for _, r := range reps {
				urls = append(urls, r.srv.URL)
			}
			events := &pickEvents{kinds: map[string]int{}}
			p, err := httpbudget.NewPicker(urls, events)
			if err != nil {
				t.Fatal(err)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
			defer client.CloseIdleConnections()
			send := func(n int) (got []int64, failed int) {
				before := make([]int64, len(reps))
				for i, r := range reps {
					before[i] = r.calls.Load()
				}
				var next, bad atomic.Int64
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						for next.Add(1) <= int64(n) {
							ctx, cancel := context.WithTimeout(context.Background(), time.Second)
							base, done := p.Pick(ctx)
							req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
							resp, err := client.Do(req)
							done(resp, err)
							if err != nil || resp.StatusCode != http.StatusOK {
								bad.Add(1)
							}
							if err == nil {
								resp.Body.Close()
							}
							cancel()
						}
					})
				}
				wg.Wait()
				got = make([]int64, len(reps))
				for i, r := range reps {
					got[i] = r.calls.Load() - before[i]
				}
				return got, int(bad.Load())
			}
			if _, failed := send(300); failed > 0 {
				t.Fatalf("healthy warm-up: %d requests failed", failed)
			}
			// Events before the fault (a first request that also opened the
			// connection may eject a replica for a moment) do not count.
			ejects := make([]int, len(urls))
			for i, u := range urls {
				ejects[i] = events.count(budget.EventEject, u)
			}
			reps[0].status.Store(int64(code))
			const n = 2000
			got, failed := send(n)
			t.Logf("replica 0 answering %d: %v of %d requests, %d failed", code, got, n, failed)
			if failed > n/10 {
				t.Errorf("%d of %d requests failed, want at most 10 %%", failed, n)
			}
			if got[0] > n/20 {
				t.Errorf("the failing replica received %d of %d requests, want at most 5 %%", got[0], n)
			}
			for i, u := range urls[1:] {
				if k := events.count(budget.EventEject, u) - ejects[i+1]; k > 0 {
					t.Errorf("healthy replica %s was ejected %d times", u, k)
				}
			}
			if events.count(budget.EventEject, urls[0]) == ejects[0] {
				t.Error("no ejection event for the failing replica")
			}
			reps[0].status.Store(0)
			send(500)
			got, _ = send(900)
			t.Logf("after the fault: %v", got)
			if share := float64(got[0]) / 900; share < 0.12 {
				t.Errorf("the recovered replica received %.1f %% of requests, want at least 12 %% (a fair share is 33 %%)", 100*share)
			}
			if events.count(budget.EventRecover, urls[0]) == 0 {
				t.Error("no recovery event for the replica")
			}
		})
	}
}

// A replica that hangs (answers nothing until each request's deadline) gets
// at most 5 % of the requests, at most 10 % of them fail, and once it
// answers again it gets its share back.
func TestPickerHangingReplica(t *testing.T) {
	reps := []*slowable{newSlowable(t, 10*time.Millisecond), newSlowable(t, 10*time.Millisecond), newSlowable(t, 10*time.Millisecond)}
	var urls []string
	for _, r := range reps {
		urls = append(urls, r.srv.URL)
	}
	p, err := httpbudget.NewPicker(urls, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	send := func(n int) (got []int64, failed int) {
		before := make([]int64, len(reps))
		for i, r := range reps {
			before[i] = r.calls.Load()
		}
		var next, bad atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for next.Add(1) <= int64(n) {
					ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
					base, done := p.Pick(ctx)
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
					resp, err := client.Do(req)
					done(resp, err)
					if err != nil {
						bad.Add(1)
					} else {
						resp.Body.Close()
					}
					cancel()
				}
			})
		}
		wg.Wait()
		got = make([]int64, len(reps))
		for i, r := range reps {
			got[i] = r.calls.Load() - before[i]
		}
		return got, int(bad.Load())
	}
	if _, failed := send(300); failed > 0 {
		t.Fatalf("healthy warm-up: %d requests failed", failed)
	}
	reps[0].delay.Store(int64(time.Hour))
	const n = 2000
	got, failed := send(n)
	t.Logf("replica 0 hanging: %v of %d requests, %d failed", got, n, failed)
	if failed > n/10 || got[0] > n/20 {
		t.Errorf("the hanging replica received %d of %d requests and %d failed, want at most 5 %% and 10 %%", got[0], n, failed)
	}
	reps[0].delay.Store(int64(10 * time.Millisecond))
	send(1000)
	got, _ = send(900)
	t.Logf("after the fault: %v", got)
	if share := float64(got[0]) / 900; share < 0.12 {
		t.Errorf("the recovered replica received %.1f %% of requests, want at least 12 %% (a fair share is 33 %%)", 100*share)
	}
}
