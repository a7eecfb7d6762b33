package connectbudget_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
)

// serveUnary serves f as the unary procedure over loopback HTTP/1.1 with
// connectbudget's server interceptor, and returns a client of it with the
// client interceptor.
func serveUnary(t *testing.T, f func(ctx context.Context) (string, error)) *connect.Client[str, str] {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(unaryProc, connect.NewUnaryHandler(unaryProc, func(ctx context.Context, _ *connect.Request[str]) (*connect.Response[str], error) {
		body, err := f(ctx)
		if err != nil {
			return nil, err
		}
		return connect.NewResponse(&str{Value: body}), nil
	}, connect.WithInterceptors(connectbudget.NewServerInterceptor())))
	srv := httptest.NewServer(mux)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		srv.CloseClientConnections()
		srv.Close()
	})
	return unaryClient(hc, srv.URL, connect.WithInterceptors(connectbudget.NewClientInterceptor()))
}

// TestTwoHopsRecoverOverLoopback: an edge with Op{Prior} calls a backend
// whose Op{Prior} guards a database, over Connect on loopback; the database
// hangs for 1.5 s, then heals. On v0.3.1 the edge's probes were refused by
// the backend's probe floor and the edge stayed on its fallback for good.
// The edge must answer from the backend again within 1.5 s of the heal
// (the bound on virtual time is 1 s; half a second more for a shared
// machine) and from the backend for at least 80 % of requests from 1 s to
// 3 s after it.
func TestTwoHopsRecoverOverLoopback(t *testing.T) {
	t.Parallel()
	for _, priors := range [][2]time.Duration{{20 * ms, 20 * ms}, {10 * ms, 50 * ms}} {
		t.Run(fmt.Sprintf("%v/%v", priors[0], priors[1]), func(t *testing.T) {
			t.Parallel()
			var hanging atomic.Bool
			db := &budget.Op{Name: "db", Prior: priors[1]}
			backend := serveUnary(t, func(ctx context.Context) (string, error) {
				return "backend", db.Do(ctx, func(ctx context.Context) error {
					wait := 5 * ms
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
			})
			toBackend := &budget.Op{Name: "backend", Prior: priors[0]}
			edge := serveUnary(t, func(ctx context.Context) (string, error) {
				err := toBackend.Do(ctx, func(ctx context.Context) error {
					_, err := unary(ctx, backend, "")
					return err
				})
				if err != nil {
					return "fallback", nil
				}
				return "backend", nil
			})
			start := time.Now()
			healed := start.Add(2500 * ms)
			var mu sync.Mutex
			var firstAt time.Time
			var ok, sent int
			var wg sync.WaitGroup
			for time.Since(start) < 6*time.Second {
				hanging.Store(time.Since(start) >= time.Second && time.Now().Before(healed))
				at := time.Now()
				wg.Go(func() {
					ctx, cancel := budget.Start(context.Background(), 300*ms)
					defer cancel()
					body, err := unary(ctx, edge, "")
					answered := err == nil && body == "backend"
					mu.Lock()
					defer mu.Unlock()
					if answered && !at.Before(healed) && (firstAt.IsZero() || at.Before(firstAt)) {
						firstAt = at
					}
					if since := at.Sub(healed); since >= time.Second && since < 3*time.Second {
						sent++
						if answered {
							ok++
						}
					}
				})
				time.Sleep(20 * ms)
			}
			wg.Wait()
			if firstAt.IsZero() {
				t.Logf("no answer from the backend after the heal; %d of %d from 1 s to 3 s after", ok, sent)
				t.Fatal("no answer from the backend after the database healed")
			}
			t.Logf("first answer from the backend %v after the heal; %d of %d from 1 s to 3 s after", firstAt.Sub(healed), ok, sent)
			if d := firstAt.Sub(healed); d > 1500*ms {
				t.Fatalf("first answer from the backend %v after the database healed; want within 1.5 s", d)
			}
			if sent == 0 || float64(ok) < 0.8*float64(sent) {
				t.Fatalf("%d of %d requests answered from the backend from 1 s to 3 s after the heal; want at least 80%%", ok, sent)
			}
		})
	}
}
