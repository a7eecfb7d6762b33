package edge_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// events records what an observer saw, one "kind:outcome" string each.
type events struct {
	mu   sync.Mutex
	seen []string
}

func (e *events) Observe(_ context.Context, ev budget.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := ev.Kind.String() + ":" + ev.Outcome.String()
	if ev.Err != nil && ev.Kind == budget.EventMalformed {
		s += ":" + ev.Err.Error()
	}
	e.seen = append(e.seen, s)
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.seen, " ")
}

// fixedMargin is a Margin of a fixed size that records transit samples.
type fixedMargin struct {
	m       time.Duration
	transit int
}

func (f *fixedMargin) For(time.Duration) time.Duration          { return f.m }
func (f *fixedMargin) ObserveTransit(time.Time, string, string) { f.transit++ }

func TestArrive(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		p         *wire.Policy
		h         wire.Metadata
		margin    time.Duration
		reason    wire.Reason
		left      time.Duration // 0: no budget started
		attempt   int
		events    string // substrings in order, space-separated
		transit   int
		malformed int
	}{
		{name: "enforcement off", p: nil, h: wire.Metadata{"request-timeout-ms": {"1"}}},
		{name: "no deadline sent", p: &wire.Policy{}},
		{name: "trusted value", p: &wire.Policy{}, h: wire.Metadata{"request-timeout-ms": {"800"}, "request-attempt": {"2"}},
			left: 800 * ms, attempt: 2, events: "arrival:"},
		{name: "margin taken off, transit learnt", p: &wire.Policy{},
			h:      wire.Metadata{"request-timeout-ms": {"800"}, "request-deadline": {"99999999999999"}},
			margin: 50 * ms, left: 750 * ms, transit: 1, events: "arrival:"},
		{name: "edge: untrusted, Default", p: &wire.Policy{Trust: wire.SourcesNone, Default: 300 * ms},
			h: wire.Metadata{"request-timeout-ms": {"9999999999"}}, left: 300 * ms, events: "arrival:"},
		{name: "expired", p: &wire.Policy{}, h: wire.Metadata{"request-timeout-ms": {"0"}},
			reason: wire.ReasonExpired, events: "refuse:expired"},
		{name: "shed", p: &wire.Policy{Min: time.Second}, h: wire.Metadata{"request-timeout-ms": {"500"}},
			reason: wire.ReasonShed, events: "refuse:shed"},
		{name: "malformed, lenient: counted, Default applies", p: &wire.Policy{Default: 200 * ms},
			h: wire.Metadata{"request-timeout-ms": {"-5"}}, left: 200 * ms, malformed: 1,
			events: "malformed:none:test: malformed deadline header ignored: Request-Timeout-Ms arrival:"},
		{name: "malformed, strict: refused", p: &wire.Policy{Strict: true},
			h: wire.Metadata{"request-timeout-ms": {"1.5"}}, reason: wire.ReasonMalformed, malformed: 1,
			events: "malformed:none:wire: malformed Request-Timeout-Ms"},
		{name: "skew", p: &wire.Policy{}, h: wire.Metadata{"request-deadline": {"1000"}}, events: "skew:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// On the bubble's clock the figures are exact.
			synctest.Test(t, func(t *testing.T) {
				var ev events
				var m *fixedMargin
				a := edge.Arrival{Adapter: "test", Stage: "checkout", Observer: &ev}
				if tc.margin > 0 {
					m = &fixedMargin{m: tc.margin}
					a.Margin = m
				}
				parent := context.Background()
				ctx, cancel, dec, err := a.Arrive(parent, tc.p, edge.Request{Header: tc.h, Now: time.Now()})
				if cancel != nil {
					defer cancel()
				}
				if dec.Reason != tc.reason || (err != nil) != (tc.reason != wire.ReasonNone) || dec.Malformed != tc.malformed {
					t.Fatalf("decision %+v, err %v; want reason %v, %d malformed", dec, err, tc.reason, tc.malformed)
				}
				if err != nil {
					if ctx != nil || cancel != nil {
						t.Error("a refused request got a context")
					}
				} else if tc.left == 0 {
					if ctx != parent || cancel != nil {
						t.Error("no budget expected, but the context was derived")
					}
				} else {
					r, ok := budget.Read(ctx)
					if !ok || r.Stage != "checkout" || r.Remaining != tc.left {
						t.Errorf("budget %+v (ok %v); want stage checkout and %v left", r, ok, tc.left)
					}
					if evs := budget.LedgerFrom(ctx).Events(); len(evs) == 0 || evs[0].Attempt != tc.attempt {
						t.Errorf("arrival events %+v, want attempt %d recorded", evs, tc.attempt)
					}
				}
				if got := ev.String(); !containsInOrder(got, tc.events) {
					t.Errorf("events %q, want %q", got, tc.events)
				}
				if m != nil && m.transit != tc.transit {
					t.Errorf("%d transit samples, want %d", m.transit, tc.transit)
				}
			})
		})
	}
}

// containsInOrder reports whether every space-separated word of want appears in got,
// in order; a malformed event's text may contain spaces, so words are matched as
// substrings.
func containsInOrder(got, want string) bool {
	if want == "" {
		return got == "" || !strings.Contains(got, "refuse")
	}
	rest := got
	for _, w := range strings.Split(want, " ") {
		i := strings.Index(rest, w)
		if i < 0 {
			return false
		}
		rest = rest[i+len(w):]
	}
	return true
}

func TestArriveErrors(t *testing.T) {
	t.Parallel()
	var a edge.Arrival
	for _, tc := range []struct {
		h    wire.Metadata
		p    *wire.Policy
		want error
	}{
		{wire.Metadata{"request-timeout-ms": {"0"}}, &wire.Policy{}, context.DeadlineExceeded},
		{wire.Metadata{"request-timeout-ms": {"5"}}, &wire.Policy{Min: time.Second}, wire.ErrShed},
		{wire.Metadata{"request-timeout-ms": {"x"}}, &wire.Policy{Strict: true}, wire.ErrMalformed},
	} {
		_, _, _, err := a.Arrive(context.Background(), tc.p, edge.Request{Header: tc.h, Now: time.Now()})
		if !errors.Is(err, tc.want) {
			t.Errorf("%v under %+v: err %v, want %v", tc.h, tc.p, err, tc.want)
		}
	}
}

func ExampleArrival_Arrive() {
	a := edge.Arrival{Adapter: "myadapter", Stage: "orders"}
	policy := &wire.Policy{Max: 5 * time.Second}
	ctx, cancel, dec, err := a.Arrive(context.Background(), policy,
		edge.Request{Header: wire.Metadata{"request-timeout-ms": {"60000"}}, Now: time.Now()})
	if err != nil {
		return // answer the refusal in the carrier's terms; the handler does not run
	}
	if cancel != nil {
		defer cancel()
	}
	r, _ := budget.Read(ctx)
	fmt.Println(dec.SourceName(), dec.Clamped, r.Stage, r.Remaining <= 5*time.Second)
	// Output: Request-Timeout-Ms true orders true
}
