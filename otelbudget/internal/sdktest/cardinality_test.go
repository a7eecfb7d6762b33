package sdktest_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/otelbudget"
	"github.com/timebudget/budget/wire"
)

// inProcess serves requests with a handler, without a network, as a new
// request: the handler does not see the client's context.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, req.WithContext(context.Background()))
	return rec.Result(), nil
}

// TestCardinalityBounded sends 10,000 requests (2,000 under the race
// detector) with random hosts, paths and
// deadline headers through httpbudget's transport and handler, with a
// handler that (wrongly) names an Op after each path, and checks that the
// number of attribute sets stays bounded: stage values past the limit are
// reported as "other", and no other attribute ever takes a value from the
// request.
func TestCardinalityBounded(t *testing.T) {
	t.Parallel()
	const limit = 16
	requests := 10_000
	if raceEnabled {
		requests = 2_000
	}
	r := newRig(t, otelbudget.WithStageLimit(limit))

	var mu sync.Mutex
	ops := map[string]*budget.Op{} // one Op per path: the misuse the stage limit guards against
	app := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		op := ops[req.URL.Path]
		if op == nil {
			op = &budget.Op{Name: req.URL.Path, Prior: time.Duration(rand.IntN(3)) * time.Second}
			ops[req.URL.Path] = op
		}
		mu.Unlock()
		_ = op.Do(req.Context(), func(context.Context) error { return nil })
	})
	server := httpbudget.NewHandler(app, edge.WithObserver(r.obs),
		edge.WithPolicy(&wire.Policy{Min: 20 * time.Millisecond}))
	send := &http.Client{Transport: httpbudget.NewTransport(inProcess{server})}
	refuse := &http.Client{Transport: httpbudget.NewTransport(inProcess{server}, edge.WithMinUseful(time.Hour))}

	rng := rand.New(rand.NewPCG(1, 2))
	token := func() string { return strconv.FormatUint(rng.Uint64(), 36) }
	values := []func() string{
		func() string { return strconv.Itoa(rng.IntN(3000)) },
		func() string { return "0" },
		token,
		func() string { return strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10) },
	}
	headers := []string{wire.HeaderRequestTimeout, wire.HeaderRequestDeadline, "X-Request-Deadline",
		"Grpc-Timeout", "Connect-Timeout-Ms", "X-" + token()}
	for i := range requests {
		ctx, cancel := budget.Config{Observer: r.obs}.Start(context.Background(), time.Duration(1+rng.IntN(2000))*time.Millisecond)
		url := "http://" + token() + ".example:" + strconv.Itoa(1+rng.IntN(65535)) + "/" + token()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range rng.IntN(4) {
			req.Header.Set(headers[rng.IntN(len(headers))], values[rng.IntN(len(values))]())
		}
		client := send
		if i%2 == 1 {
			client = refuse // refused locally, with the random host as the stage
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
		}
		cancel()
	}

	got := r.collect(t)
	stages := map[string]bool{}
	points := 0
	for name, m := range got {
		for _, p := range m.points {
			points++
			for _, kv := range p.attrs.ToSlice() {
				switch kv.Key {
				case "stage":
					stages[kv.Value.AsString()] = true
				case "event", "outcome", "reason":
					if !isLabel(kv.Value.AsString()) {
						t.Errorf("%s: %s=%q is not a label from code", name, kv.Key, kv.Value.AsString())
					}
				default:
					t.Errorf("%s: unexpected attribute %s", name, kv.Key)
				}
			}
		}
	}
	if len(stages) > limit+1 {
		t.Errorf("%d distinct stage values, want at most %d", len(stages), limit+1)
	}
	if !stages[otelbudget.OtherStage] {
		t.Errorf("stage values past the limit were not reported as %q: %v", otelbudget.OtherStage, stages)
	}
	// Each stage has at most a few dozen attribute sets (events, outcomes,
	// reasons), whatever the traffic.
	if max := (limit + 1) * 40; points > max {
		t.Errorf("%d data points, want at most %d", points, max)
	}
	if p, ok := got["budget.refusals"].find(stage(otelbudget.OtherStage), reason("insufficient")); !ok || p.count < int64(requests/4) {
		t.Errorf("refusals past the stage limit: %d (found %v), want most of the %d local refusals", p.count, ok, requests/2)
	}
	t.Logf("%d requests: %d data points, %d stage values", requests, points, len(stages))
}

// isLabel reports whether s is one of the closed-list values the observer
// uses for event, outcome and reason.
func isLabel(s string) bool {
	for o := budget.OutcomeNone; o <= budget.OutcomeLimit; o++ {
		if s == o.String() {
			return true
		}
	}
	switch s {
	case "arrival", "attempt", "fallback", "skew", "malformed":
		return true
	}
	return false
}

// TestStagesFromCodeKeepTheirRoom: boundary stages derived from what callers
// send (a gRPC server's unregistered methods named after the client's
// request, hosts of local refusals) fill the stage limit, and an Op's name
// seen after them is still reported as itself, not as "other"; the number
// of stage values stays bounded.
func TestStagesFromCodeKeepTheirRoom(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		event budget.EventKind
	}{
		{"arrivals", budget.EventArrival},
		{"refusals", budget.EventRefuse},
		{"malformed headers", budget.EventMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			ctx := context.Background()
			for i := range 3 * otelbudget.DefaultStageLimit {
				r.obs.Observe(ctx, budget.Event{Kind: tc.event, Stage: "/evil.Service/M" + strconv.Itoa(i),
					Remaining: time.Second, Outcome: budget.OutcomeShed})
			}
			bctx, cancel := budget.Config{Observer: r.obs}.Start(ctx, time.Second)
			defer cancel()
			op := &budget.Op{Name: "payments.db"}
			if err := op.Do(bctx, func(context.Context) error { return nil }); err != nil {
				t.Fatal(err)
			}
			got := r.collect(t)
			if _, ok := got["budget.remaining"].find(stage("payments.db"), event("attempt")); !ok {
				t.Errorf("the attempt of the Op payments.db was not reported under its name")
			}
			stages := map[string]bool{}
			for _, m := range got {
				for _, p := range m.points {
					if v, ok := p.attrs.Value("stage"); ok {
						stages[v.AsString()] = true
					}
				}
			}
			if len(stages) > otelbudget.DefaultStageLimit+1 {
				t.Errorf("%d distinct stage values, want at most %d", len(stages), otelbudget.DefaultStageLimit+1)
			}
		})
	}
}
