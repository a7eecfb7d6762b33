package sdktest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/otelbudget"
	"github.com/timebudget/budget/wire"
)

// backendView is what the backend's handler saw.
type backendView struct {
	Deadline    int64 // Unix ns; 0 without one
	Done        bool  // the context had ended on arrival
	HasDecision bool
	Decision    wire.Decision
	Class       string // the request's class on the handler's context
}

// hops is the chain edge → middle → backend on loopback. The edge runs
// httpbudget and sends its budget in baggage through otelhttp with
// otelbudget's propagator. The middle runs otelhttp with the standard W3C
// propagators and nothing of this library: it forwards baggage as any
// otel-instrumented service in any language does. The backend runs otelhttp
// with otelbudget's propagator, then httpbudget.
type hops struct {
	edge, middle, backend *httptest.Server
	edgeDeadline          chan time.Time
	client                *http.Client
}

func newHops(t *testing.T, backendPolicy *wire.Policy) *hops {
	t.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	standard := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	ours := func(p *wire.Policy) propagation.TextMapPropagator {
		return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{},
			otelbudget.NewPropagator(otelbudget.WithPolicy(p)))
	}
	h := &hops{edgeDeadline: make(chan time.Time, 1)}

	h.backend = httptest.NewServer(otelhttp.NewHandler(httpbudget.NewHandler(http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			var v backendView
			v.Done = r.Context().Err() != nil
			if dl, ok := r.Context().Deadline(); ok {
				v.Deadline = dl.UnixNano()
			}
			v.Decision, v.HasDecision = otelbudget.BaggageDecision(r.Context())
			v.Class = budget.CriticalityFrom(r.Context()).String()
			_ = json.NewEncoder(w).Encode(v)
		}), edge.WithPolicy(backendPolicy)),
		"backend", otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(ours(backendPolicy))))

	// The middle: otelhttp and net/http only.
	middleTransport := &http.Transport{}
	middleClient := &http.Client{Transport: otelhttp.NewTransport(middleTransport,
		otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(standard))}
	h.middle = httptest.NewServer(otelhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, h.backend.URL, nil)
		resp, err := middleClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		_, _ = io.Copy(w, resp.Body)
	}), "middle", otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(standard)))

	edgeTransport := &http.Transport{}
	edgeClient := &http.Client{Transport: otelhttp.NewTransport(httpbudget.NewTransport(edgeTransport),
		otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(ours(nil)))}
	edgePolicy := &wire.Policy{Trust: wire.SourcesNone, Default: 2 * time.Second, Max: 2 * time.Second,
		Criticality: wire.CriticalityCritical}
	h.edge = httptest.NewServer(httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dl, _ := r.Context().Deadline()
		h.edgeDeadline <- dl
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, h.middle.URL, nil)
		resp, err := edgeClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		_, _ = io.Copy(w, resp.Body)
	}), edge.WithPolicy(edgePolicy)))

	h.client = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		h.edge.Close()
		h.middle.Close()
		h.backend.Close()
		edgeTransport.CloseIdleConnections()
		middleTransport.CloseIdleConnections()
		h.client.CloseIdleConnections()
	})
	return h
}

// get sends a request to url with the given baggage header (none when
// empty) and decodes the backend's view.
func (h *hops) get(t *testing.T, url, bag string) backendView {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if bag != "" {
		req.Header.Set("Baggage", bag)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v backendView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	return v
}

// TestBaggageCrossesPlainHop is the case: the edge's deadline
// reaches the backend through a middle service that runs otelhttp and no
// budget code, equal to the edge's within the skew guard (and never later),
// and so does the class the edge's policy gave the request: the backend's
// httpbudget has no classifier, and keeps the class the baggage put on the
// request's context over its own policy's (sheddable).
func TestBaggageCrossesPlainHop(t *testing.T) {
	t.Parallel()
	h := newHops(t, &wire.Policy{Max: 10 * time.Second, Criticality: wire.CriticalitySheddable})
	for range 5 {
		v := h.get(t, h.edge.URL, "")
		edge := <-h.edgeDeadline
		if v.Deadline == 0 || !v.HasDecision || v.Decision.Source != wire.SourceRequestDeadline {
			t.Fatalf("backend saw %+v, want the edge's deadline from baggage", v)
		}
		if v.Class != "critical" {
			t.Errorf("backend's class %q, want the edge's critical", v.Class)
		}
		diff := edge.Sub(time.Unix(0, v.Deadline))
		if diff < 0 || diff > wire.DefaultSkew {
			t.Errorf("backend's deadline is %v before the edge's, want within [0, %v]", diff, wire.DefaultSkew)
		}
		t.Logf("backend's deadline %v before the edge's", diff)
	}
}

// A backend whose policy does not trust Request-Criticality ignores the
// baggage's class as it would the header's: its policy's class applies.
func TestBaggageClassUntrusted(t *testing.T) {
	t.Parallel()
	h := newHops(t, &wire.Policy{Max: 10 * time.Second, Trust: wire.SourceRequestDeadline, Criticality: wire.CriticalitySheddable})
	v := h.get(t, h.edge.URL, "")
	<-h.edgeDeadline
	if v.Deadline == 0 || !v.HasDecision || v.Decision.Source != wire.SourceRequestDeadline {
		t.Fatalf("backend saw %+v, want the edge's deadline from baggage", v)
	}
	if v.Class != "sheddable" {
		t.Errorf("backend's class %q, want its policy's sheddable: it does not trust the class", v.Class)
	}
	// A client's own member reaches the backend only through the middle,
	// which runs no budget code: still untrusted.
	v = h.get(t, h.middle.URL, otelbudget.BaggageCriticalityKey+"=critical")
	if v.Class != "sheddable" {
		t.Errorf("backend's class %q from a client's member, want sheddable", v.Class)
	}
}

// TestBaggageHostile: hostile members sent to the middle (which forwards
// them, as otelhttp does) are decided at the backend as the header policy
// decides the same value in Request-Deadline: refused as expired, ignored as
// malformed or skewed, clamped to Max; too many members are cut by the W3C
// limits before the member is reached.
func TestBaggageHostile(t *testing.T) {
	t.Parallel()
	const max = 3 * time.Second
	pol := &wire.Policy{Max: max}
	h := newHops(t, pol)
	now := time.Now()
	ms := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).UnixMilli(), 10) }
	var many []string
	for i := range 80 {
		many = append(many, fmt.Sprintf("m%d=x", i))
	}
	for _, tc := range []struct {
		name, value string
		bag         string // the whole header, when not just the member
	}{
		{name: "huge", value: strings.Repeat("9", 40)},
		{name: "negative", value: "-1500"},
		{name: "far future", value: ms(100 * 365 * 24 * time.Hour)},
		{name: "far past", value: ms(-time.Hour)},
		{name: "just passed", value: ms(-50 * time.Millisecond)},
		{name: "garbage", value: "tomorrow"},
		{name: "unit", value: "1500ms"},
		{name: "many members", value: ms(time.Hour), bag: strings.Join(append(many, otelbudget.BaggageKey+"="+ms(time.Hour)), ",")},
	} {
		bag := tc.bag
		if bag == "" {
			bag = otelbudget.BaggageKey + "=" + tc.value
		}
		start := time.Now()
		v := h.get(t, h.middle.URL, bag)
		if tc.name == "many members" {
			// The W3C limit (64 members) cuts the list before the member: nothing is read.
			if v.HasDecision || v.Deadline == 0 || time.Unix(0, v.Deadline).After(time.Now().Add(max)) {
				t.Errorf("%s: backend saw %+v, want the member unread and Max applied", tc.name, v)
			}
			continue
		}
		want, _ := pol.Decide(wire.HTTPHeader{"Request-Deadline": {tc.value}}, start)
		got := v.Decision
		if !v.HasDecision || got.Source != want.Source || got.Reason != want.Reason || got.Malformed != want.Malformed ||
			got.Skew != want.Skew || got.Clamped != want.Clamped {
			t.Errorf("%s: backend decided %+v, the header policy %+v", tc.name, got, want)
			continue
		}
		switch {
		case want.Reason == wire.ReasonExpired:
			if !v.Done {
				t.Errorf("%s: the backend's context was running, want it done: the caller's deadline had passed", tc.name)
			}
		case v.Deadline == 0 || time.Unix(0, v.Deadline).After(time.Now().Add(max)):
			t.Errorf("%s: backend deadline %v, want at most Max (%v) away", tc.name, time.Unix(0, v.Deadline), max)
		}
	}
}
