package sdktest_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/otelbudget"
	"github.com/timebudget/budget/wire"
)

// The orphan scenario: a request with orphanBudget (in milliseconds) whose
// work ignores its context and ends orphanSleep later, far enough past the
// deadline to count as orphaned even on a loaded machine.
const (
	orphanBudget = "100"
	orphanSleep  = 250 * time.Millisecond
)

// scenarios is a server whose paths each make one kind of budget event
// happen, deterministically: none depends on how fast the machine is.
func scenarios() http.Handler {
	fast := &budget.Op{Name: "fast"}
	slow := &budget.Op{Name: "slow", Cap: 5 * time.Millisecond}
	costly := &budget.Op{Name: "costly", Prior: time.Hour}
	cheap := &budget.Op{Name: "cheap"}
	stubborn := &budget.Op{Name: "stubborn"}
	flaky := &budget.Op{Name: "flaky"}
	hedged := &budget.Op{Name: "hedged", MinSamples: 1 << 20}
	noQuota := &budget.RetryQuota{Ratio: -1, MinPerSecond: -1}
	ok := func(context.Context) error { return nil }
	waitDone := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

	mux := http.NewServeMux()
	handle := func(path string, fn func(ctx context.Context) error) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if err := fn(r.Context()); err != nil {
				http.Error(w, err.Error(), httpbudget.StatusOf(r.Context(), err))
			}
		})
	}
	handle("/ok", func(ctx context.Context) error { return fast.Do(ctx, ok) })
	handle("/expire", func(ctx context.Context) error { return slow.Do(ctx, waitDone) })
	handle("/refuse", func(ctx context.Context) error { return costly.Do(ctx, ok) })
	handle("/ladder", func(ctx context.Context) error {
		l := budget.Ladder[int]{Rungs: []budget.Rung[int]{
			{Op: costly, Fn: func(context.Context) (int, error) { return 1, nil }},
			{Op: cheap, Fn: func(context.Context) (int, error) { return 2, nil }},
		}}
		_, _, err := l.Do(ctx)
		return err
	})
	handle("/orphan", func(ctx context.Context) error {
		// Work that ignores its context and ends well after the deadline.
		return stubborn.Do(ctx, func(context.Context) error { time.Sleep(orphanSleep); return nil })
	})
	handle("/retry", func(ctx context.Context) error {
		r := budget.Retry{Backoff: -1, Quota: noQuota}
		err := r.Do(ctx, flaky, func(context.Context) error { return errors.New("boom") })
		if errors.Is(err, budget.ErrInsufficient) {
			return nil
		}
		return err
	})
	handle("/hedge", func(ctx context.Context) error {
		h := budget.Hedge{Delay: time.Millisecond}
		return h.Do(ctx, hedged, func(ctx context.Context) error {
			if budget.AttemptNumber(ctx) == 1 {
				return waitDone(ctx)
			}
			return nil
		})
	})
	handle("/queue", func(ctx context.Context) error {
		var q budget.Queue[int]
		gone, cancel := context.WithCancel(ctx)
		err := q.Put(gone, 1)
		cancel()
		if err != nil {
			return err
		}
		if err := q.Put(ctx, 2); err != nil {
			return err
		}
		_, _, err = q.Get(ctx) // drops 1, hands out 2
		return err
	})
	handle("/detach", func(ctx context.Context) error {
		var d budget.Detacher
		if err := d.Go(ctx, "audit", ok); err != nil {
			return err
		}
		return d.Wait(context.Background())
	})
	return mux
}

// get sends one request with the given deadline headers.
func get(t *testing.T, url string, hdr ...string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestMetricsThroughHTTP drives every kind of budget event through
// httpbudget's handler and transport and checks every metric's name, unit and
// attribute sets.
func TestMetricsThroughHTTP(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	srv := httptest.NewServer(httpbudget.NewHandler(scenarios(), edge.WithObserver(r.obs),
		edge.WithPolicy(&wire.Policy{Min: 5 * time.Millisecond})))
	defer srv.Close()

	const rt, rd = wire.HeaderRequestTimeout, wire.HeaderRequestDeadline
	for _, path := range []string{"/ok", "/expire", "/refuse", "/ladder", "/retry", "/hedge", "/queue", "/detach"} {
		get(t, srv.URL+path, rt, "2000")
	}
	get(t, srv.URL+"/orphan", rt, orphanBudget)
	if code := get(t, srv.URL+"/ok", rt, "0"); code != http.StatusGatewayTimeout {
		t.Errorf("expired request: status %d", code)
	}
	if code := get(t, srv.URL+"/ok", rt, "2"); code != http.StatusGatewayTimeout {
		t.Errorf("request below Min: status %d", code)
	}
	get(t, srv.URL+"/ok", rt, "junk")
	get(t, srv.URL+"/ok", rd, strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10))

	// A request the client refuses to send.
	ctx, cancel := budget.Config{Observer: r.obs}.Start(context.Background(), time.Second)
	defer cancel()
	client := &http.Client{Transport: httpbudget.NewTransport(nil, edge.WithMinUseful(time.Hour),
		edge.WithClientStage("pricing-api"))}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/ok", nil)
	if _, err := client.Do(req); !errors.Is(err, budget.ErrInsufficient) {
		t.Fatalf("local refusal: %v", err)
	}

	got := r.collect(t)
	want := []struct {
		name, unit string
		attrs      []attribute.KeyValue
		min        int64 // the least count (a counter's value or a histogram's samples)
	}{
		{"budget.remaining", "s", kvs(stage("request"), event("arrival")), 9},
		{"budget.remaining", "s", kvs(stage("fast"), event("attempt")), 1},
		{"budget.remaining", "s", kvs(stage("cheap"), event("fallback")), 1},
		{"budget.used", "1", kvs(stage("fast"), outcome("ok")), 1},
		{"budget.used", "1", kvs(stage("slow"), outcome("expired")), 1},
		{"budget.used", "1", kvs(stage("flaky"), outcome("failed")), 1},
		{"budget.queue.wait", "s", kvs(stage("queue"), outcome("ok")), 1},
		{"budget.queue.wait", "s", kvs(stage("queue"), outcome("canceled")), 1},
		{"budget.refusals", "{refusal}", kvs(stage("costly"), reason("insufficient")), 2},
		{"budget.refusals", "{refusal}", kvs(stage("flaky"), reason("retry_suppressed")), 1},
		{"budget.refusals", "{refusal}", kvs(stage("request"), reason("expired")), 1},
		{"budget.refusals", "{refusal}", kvs(stage("request"), reason("shed")), 1},
		{"budget.refusals", "{refusal}", kvs(stage("request"), reason("malformed")), 1},
		{"budget.refusals", "{refusal}", kvs(stage("request"), reason("skew")), 1},
		{"budget.refusals", "{refusal}", kvs(stage("pricing-api"), reason("insufficient")), 1},
		{"budget.expiries", "{attempt}", kvs(stage("slow")), 1},
		{"budget.hedges", "{attempt}", kvs(stage("hedged")), 1},
		{"budget.queue.drops", "{item}", kvs(stage("queue"), reason("canceled")), 1},
		{"budget.detached", "{task}", kvs(stage("audit")), 1},
		{"budget.orphaned", "{attempt}", kvs(stage("stubborn")), 1},
	}
	for _, w := range want {
		m, ok := got[w.name]
		if !ok {
			t.Errorf("no metric %s", w.name)
			continue
		}
		if m.unit != w.unit {
			t.Errorf("%s: unit %q, want %q", w.name, m.unit, w.unit)
		}
		p, ok := m.find(w.attrs...)
		if !ok {
			t.Errorf("%s: no point with %v; have %v", w.name, w.attrs, sets(m))
			continue
		}
		if p.count < w.min {
			t.Errorf("%s %v: count %d, want at least %d", w.name, w.attrs, p.count, w.min)
		}
	}
	allowed := map[attribute.Key]bool{"stage": true, "event": true, "outcome": true, "reason": true}
	for name, m := range got {
		for _, p := range m.points {
			for _, kv := range p.attrs.ToSlice() {
				if !allowed[kv.Key] {
					t.Errorf("%s: attribute %s is not one the observer registers", name, kv.Key)
				}
			}
		}
	}
	if p, ok := got["budget.remaining"].find(stage("stubborn"), event("attempt")); !ok || p.sum > 0.1 {
		t.Errorf("remaining at the orphaned attempt: %v s (found %v), want at most the 100 ms sent", p.sum, ok)
	}
}

func kvs(kv ...attribute.KeyValue) []attribute.KeyValue { return kv }

func sets(m metric) []string {
	var out []string
	for _, p := range m.points {
		out = append(out, p.attrs.Encoded(attribute.DefaultEncoder()))
	}
	return out
}

// TestNewObserverOptions checks that options are applied and that nil and
// out-of-range ones are ignored.
func TestNewObserverOptions(t *testing.T) {
	t.Parallel()
	if _, err := otelbudget.NewObserver(nil, otelbudget.WithMeterProvider(nil), otelbudget.WithStageLimit(-1),
		otelbudget.WithOrphanGrace(-time.Second)); err != nil {
		t.Fatal(err)
	}
	var nilObs *otelbudget.Observer
	nilObs.Observe(context.Background(), budget.Event{Kind: budget.EventRefuse}) // must not panic

	r := newRig(t)
	var nilCtx context.Context
	r.obs.Observe(nilCtx, budget.Event{Kind: budget.EventRefuse, Stage: "s", Outcome: budget.OutcomeShed})
	r.obs.Observe(nilCtx, budget.Event{Kind: budget.EventAttempt, Stage: "s", Remaining: time.Second, Duration: time.Millisecond})
	if p, ok := r.collect(t)["budget.refusals"].find(stage("s"), reason("shed")); !ok || p.count != 1 {
		t.Errorf("a refusal observed with a nil context was not counted (found %v, count %d)", ok, p.count)
	}
}

// TestObserverAllocations pins what recording an event's metrics costs once
// its stage has been seen, with the OpenTelemetry SDK behind it and no
// recording span: nothing.
func TestObserverAllocations(t *testing.T) {
	r := newRig(t)
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()
	for _, ev := range []budget.Event{
		{Kind: budget.EventArrival, Stage: "request", Remaining: time.Second},
		{Kind: budget.EventAttempt, Stage: "geometry", Remaining: time.Second, Duration: time.Millisecond, Outcome: budget.OutcomeOK},
		{Kind: budget.EventAttempt, Stage: "geometry", Remaining: time.Second, Duration: time.Second, Outcome: budget.OutcomeExpired},
		{Kind: budget.EventRefuse, Stage: "geometry", Outcome: budget.OutcomeInsufficient},
		{Kind: budget.EventQueue, Stage: "queue", Duration: time.Millisecond, Outcome: budget.OutcomeExpired},
	} {
		r.obs.Observe(ctx, ev) // first sight of the stage builds its attribute sets
		if n := testing.AllocsPerRun(200, func() { r.obs.Observe(ctx, ev) }); n != 0 {
			t.Errorf("%s %s: %v allocations, want 0", ev.Kind, ev.Outcome, n)
		}
	}
}

// TestObserveEvents checks, event by event, which metric and attribute set
// each kind of event records, and that options change what they govern.
func TestObserveEvents(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	cases := []struct {
		name   string
		opts   []otelbudget.Option
		ev     budget.Event
		metric string
		attrs  []attribute.KeyValue
		absent string // a metric the event must not record
	}{
		{"arrival", nil, budget.Event{Kind: budget.EventArrival, Stage: "edge", Remaining: 300 * ms},
			"budget.remaining", kvs(stage("edge"), event("arrival")), "budget.used"},
		{"attempt", nil, budget.Event{Kind: budget.EventAttempt, Stage: "db", Remaining: 300 * ms, Duration: 10 * ms, Outcome: budget.OutcomeOK},
			"budget.remaining", kvs(stage("db"), event("attempt")), "budget.expiries"},
		{"attempt without a deadline", nil, budget.Event{Kind: budget.EventAttempt, Stage: "db", Duration: 10 * ms, Outcome: budget.OutcomeOK},
			"budget.used", kvs(stage("db"), outcome("ok")), "budget.remaining"},
		{"expired attempt", nil, budget.Event{Kind: budget.EventAttempt, Stage: "db", Remaining: 300 * ms, Duration: 300 * ms, Outcome: budget.OutcomeExpired},
			"budget.expiries", kvs(stage("db")), "budget.orphaned"},
		{"orphaned attempt", nil, budget.Event{Kind: budget.EventAttempt, Stage: "db", Remaining: 300 * ms, Duration: 306 * ms, Outcome: budget.OutcomeCanceled},
			"budget.orphaned", kvs(stage("db")), "budget.expiries"},
		{"within a wider orphan grace", []otelbudget.Option{otelbudget.WithOrphanGrace(10 * ms)},
			budget.Event{Kind: budget.EventAttempt, Stage: "db", Remaining: 300 * ms, Duration: 306 * ms, Outcome: budget.OutcomeCanceled},
			"budget.used", kvs(stage("db"), outcome("canceled")), "budget.orphaned"},
		{"fallback", nil, budget.Event{Kind: budget.EventFallback, Stage: "cache", Remaining: 20 * ms, Duration: ms, Outcome: budget.OutcomeOK},
			"budget.remaining", kvs(stage("cache"), event("fallback")), "budget.refusals"},
		{"refusal", nil, budget.Event{Kind: budget.EventRefuse, Stage: "db", Outcome: budget.OutcomeShed},
			"budget.refusals", kvs(stage("db"), reason("shed")), "budget.remaining"},
		{"skew", nil, budget.Event{Kind: budget.EventSkew, Stage: "edge"},
			"budget.refusals", kvs(stage("edge"), reason("skew")), "budget.remaining"},
		{"malformed", nil, budget.Event{Kind: budget.EventMalformed, Stage: "edge"},
			"budget.refusals", kvs(stage("edge"), reason("malformed")), "budget.remaining"},
		{"hedge", nil, budget.Event{Kind: budget.EventHedge, Stage: "db"},
			"budget.hedges", kvs(stage("db")), "budget.refusals"},
		{"queue served", nil, budget.Event{Kind: budget.EventQueue, Stage: "jobs", Duration: ms, Outcome: budget.OutcomeOK},
			"budget.queue.wait", kvs(stage("jobs"), outcome("ok")), "budget.queue.drops"},
		{"queue drop", nil, budget.Event{Kind: budget.EventQueue, Stage: "jobs", Duration: ms, Outcome: budget.OutcomeExpired},
			"budget.queue.drops", kvs(stage("jobs"), reason("expired")), "budget.expiries"},
		{"detach", nil, budget.Event{Kind: budget.EventDetach, Stage: "audit"},
			"budget.detached", kvs(stage("audit")), "budget.refusals"},
		{"ejection", nil, budget.Event{Kind: budget.EventEject, Stage: "budget_aware 10.0.0.1:8080"},
			"budget.ejections", kvs(stage("budget_aware 10.0.0.1:8080"), event("eject")), "budget.refusals"},
		{"recovery", nil, budget.Event{Kind: budget.EventRecover, Stage: "budget_aware 10.0.0.1:8080"},
			"budget.ejections", kvs(stage("budget_aware 10.0.0.1:8080"), event("recover")), "budget.refusals"},
		{"past the stage limit", []otelbudget.Option{otelbudget.WithStageLimit(1)},
			budget.Event{Kind: budget.EventDetach, Stage: "second"},
			"budget.detached", kvs(stage(otelbudget.OtherStage)), "budget.refusals"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, tc.opts...)
			ctx, cancel := budget.Start(context.Background(), time.Second)
			defer cancel()
			r.obs.Observe(ctx, budget.Event{Kind: budget.EventWait, Stage: "first"}) // takes the first stage slot
			r.obs.Observe(ctx, tc.ev)
			got := r.collect(t)
			if p, ok := got[tc.metric].find(tc.attrs...); !ok || p.count != 1 {
				t.Errorf("%s %v: count %d (found %v), want 1; have %v", tc.metric, tc.attrs, p.count, ok, sets(got[tc.metric]))
			}
			if _, ok := got[tc.absent]; ok {
				t.Errorf("%s recorded too", tc.absent)
			}
		})
	}
}
