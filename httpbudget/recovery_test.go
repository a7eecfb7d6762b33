package httpbudget_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
)

// TestTwoHopsRecoverOverLoopback is the reproduction of a chain that never
// recovered, over real loopback HTTP: an edge with Op{Prior} calls a backend
// whose Op{Prior} guards a database; the database hangs, then heals. On
// v0.3.1 the edge's probes (capped at 2 × its Prior) reached the backend
// with less than the backend's own probe floor (2 × its Prior), every probe
// was refused there, and the edge stayed on its fallback for good: 0 of 96
// requests answered by the backend 1 s to 3 s after the database healed.
// Now a probe's floor is the latency measured, not the Prior; a failed
// probe's cap doubles; and the probe mark crosses the wire, so that the
// backend admits the edge's probe whatever its own estimate says.
func TestTwoHopsRecoverOverLoopback(t *testing.T) {
	t.Parallel()
	for _, priors := range [][2]time.Duration{{20 * time.Millisecond, 20 * time.Millisecond}, {10 * time.Millisecond, 50 * time.Millisecond}} {
		t.Run(fmt.Sprintf("%v/%v", priors[0], priors[1]), func(t *testing.T) {
			t.Parallel()
			first, share := runTwoHops(t, priors[0], priors[1])
			if first < 0 {
				t.Fatal("no answer from the backend after the database healed")
			}
			// The bound is 1 s (see the root package's recovery tests, on
			// virtual time); here, on a shared machine, half a second more.
			if first > 1500*time.Millisecond {
				t.Fatalf("first answer from the backend %v after the database healed; want within 1.5 s", first)
			}
			if share < 0.8 {
				t.Fatalf("%.0f%% of the edge's answers came from the backend from 1 s to 3 s after the database healed; want at least 80%%", 100*share)
			}
		})
	}
}

// runTwoHops runs the chain: a request every 20 ms with 300 ms, the
// database healthy for 1 s, hanging for 1.5 s, then healthy for 3.5 s. It
// returns how long after the database healed the edge first answered from
// the backend (-1: never), and the share of requests answered from the
// backend from 1 s to 3 s after it healed.
func runTwoHops(t *testing.T, edgePrior, backendPrior time.Duration) (time.Duration, float64) {
	var hanging atomic.Bool
	db := &budget.Op{Name: "db", Prior: backendPrior}
	backend := httptest.NewServer(httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := db.Do(r.Context(), func(ctx context.Context) error {
			wait := 5 * time.Millisecond
			if hanging.Load() {
				wait = time.Hour
			}
			select {
			case <-time.After(wait):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err != nil {
			httpbudget.WriteError(w, err)
			return
		}
		_, _ = io.WriteString(w, "backend")
	}), edge.WithStage("backend")))
	defer backend.Close()

	client := &http.Client{Transport: httpbudget.NewTransport(nil)}
	defer client.CloseIdleConnections()
	toBackend := &budget.Op{Name: "backend", Prior: edgePrior}
	edge := httptest.NewServer(httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := toBackend.Do(r.Context(), func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, backend.URL, nil)
			if err != nil {
				return err
			}
			res, err := client.Do(req)
			if err != nil {
				return err
			}
			defer res.Body.Close()
			_, _ = io.Copy(io.Discard, res.Body)
			if res.StatusCode != http.StatusOK {
				return errors.New(res.Status)
			}
			return nil
		})
		if err != nil {
			_, _ = io.WriteString(w, "fallback")
			return
		}
		_, _ = io.WriteString(w, "backend")
	}), edge.WithStage("edge")))
	defer edge.Close()

	start := time.Now()
	healed := start.Add(2500 * time.Millisecond)
	var mu sync.Mutex
	var firstAt time.Time
	var okWindow, sentWindow int
	var wg sync.WaitGroup
	for time.Since(start) < 6*time.Second {
		hanging.Store(time.Since(start) >= time.Second && time.Now().Before(healed))
		at := time.Now()
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, edge.URL, nil)
			req.Header.Set("Request-Timeout-Ms", "300")
			res, err := http.DefaultClient.Do(req)
			fromBackend := false
			if err == nil {
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				fromBackend = string(body) == "backend"
			}
			mu.Lock()
			defer mu.Unlock()
			if fromBackend && !at.Before(healed) && (firstAt.IsZero() || at.Before(firstAt)) {
				firstAt = at
			}
			if since := at.Sub(healed); since >= time.Second && since < 3*time.Second {
				sentWindow++
				if fromBackend {
					okWindow++
				}
			}
		})
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	first := time.Duration(-1)
	if !firstAt.IsZero() {
		first = firstAt.Sub(healed)
	}
	share := 0.0
	if sentWindow > 0 {
		share = float64(okWindow) / float64(sentWindow)
	}
	t.Logf("edge Prior %v, backend Prior %v: first answer from the backend %v after the database healed; %d of %d from 1 s to 3 s after",
		edgePrior, backendPrior, first, okWindow, sentWindow)
	return first, share
}
