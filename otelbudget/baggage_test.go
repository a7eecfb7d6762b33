package otelbudget_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/otelbudget"
	"github.com/timebudget/budget/wire"
)

func unixMs(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// TestPropagatorRoundTrip: Inject writes the context's deadline as the
// budget-deadline member beside the other members, replacing a stale one;
// Extract places the same deadline (to the millisecond, rounded down) on the
// receiving context and takes the member out of its baggage.
func TestPropagatorRoundTrip(t *testing.T) {
	t.Parallel()
	prop := otelbudget.NewPropagator()
	dl := time.Now().Add(3 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), dl)
	defer cancel()
	user, _ := baggage.NewMemberRaw("user", "42")
	stale, _ := baggage.NewMemberRaw(otelbudget.BaggageKey, "1")
	bag, _ := baggage.New(user, stale)
	ctx = baggage.ContextWithBaggage(ctx, bag)

	h := http.Header{}
	prop.Inject(ctx, propagation.HeaderCarrier(h))
	got := h.Get("baggage")
	if !strings.Contains(got, "user=42") || !strings.Contains(got, otelbudget.BaggageKey+"="+unixMs(dl)) || strings.Contains(got, otelbudget.BaggageKey+"=1,") {
		t.Fatalf("baggage %q, want user=42 and %s=%s", got, otelbudget.BaggageKey, unixMs(dl))
	}

	in := prop.Extract(context.Background(), propagation.HeaderCarrier(h))
	idl, ok := in.Deadline()
	if !ok || idl.After(dl) || dl.Sub(idl) >= time.Millisecond+time.Microsecond {
		t.Fatalf("extracted deadline %v (%v), want %v rounded down to the ms", idl, ok, dl)
	}
	if b := baggage.FromContext(in); b.Member("user").Value() != "42" || b.Member(otelbudget.BaggageKey).Key() != "" {
		t.Errorf("extracted baggage %q, want user=42 and no %s", b, otelbudget.BaggageKey)
	}
	if dec, ok := otelbudget.BaggageDecision(in); !ok || dec.Source != wire.SourceRequestDeadline {
		t.Errorf("decision %+v (%v), want one set by the member", dec, ok)
	}

	// No deadline: nothing sent, and the stale member is dropped.
	h = http.Header{}
	prop.Inject(baggage.ContextWithBaggage(context.Background(), bag), propagation.HeaderCarrier(h))
	if got := h.Get("baggage"); got != "user=42" {
		t.Errorf("without a deadline: baggage %q, want user=42", got)
	}
}

// TestPropagatorPolicy: the member is decided as the Request-Deadline header
// is, value for value: the decision equals the header policy's, and the
// context's deadline is the decision's.
func TestPropagatorPolicy(t *testing.T) {
	t.Parallel()
	now := time.Now()
	values := map[string]string{
		"in 2s":         unixMs(now.Add(2 * time.Second)),
		"far future":    unixMs(now.Add(365 * 24 * time.Hour)),
		"just passed":   unixMs(now.Add(-100 * time.Millisecond)),
		"far past":      unixMs(now.Add(-time.Hour)),
		"huge":          "99999999999999999999",
		"negative":      "-5",
		"garbage":       "soon",
		"fraction":      "1767225600123.5",
		"in 20ms":       unixMs(now.Add(20 * time.Millisecond)),
		"percent-coded": "%31%37",
	}
	policies := map[string]*wire.Policy{
		"zero":   {},
		"max":    {Max: 5 * time.Second, Min: 50 * time.Millisecond, AnswerMargin: 10 * time.Millisecond},
		"strict": {Max: 5 * time.Second, Strict: true},
		"edge":   {Trust: wire.SourcesNone, Default: time.Second},
	}
	for pname, pol := range policies {
		prop := otelbudget.NewPropagator(otelbudget.WithPolicy(pol))
		for vname, v := range values {
			h := http.Header{"Baggage": {otelbudget.BaggageKey + "=" + v}}
			start := time.Now()
			ctx := prop.Extract(context.Background(), propagation.HeaderCarrier(h))
			end := time.Now()
			dec, got := otelbudget.BaggageDecision(ctx)
			raw := baggage.FromContext(prop.Extract(context.Background(), propagation.HeaderCarrier(http.Header{"Baggage": {"x=" + v}}))).Member("x").Value()
			want, _ := pol.Decide(wire.HTTPHeader{"Request-Deadline": {raw}}, start)
			name := pname + "/" + vname
			if want.Source == 0 && want.Malformed == 0 && !want.Skew && want.Reason == wire.ReasonNone {
				if got {
					t.Errorf("%s: decision %+v, want the member not read", name, dec)
				}
				if _, ok := ctx.Deadline(); ok {
					t.Errorf("%s: a deadline was placed from an unread member", name)
				}
				continue
			}
			if !got || dec.Source != want.Source || dec.Reason != want.Reason || dec.Malformed != want.Malformed ||
				dec.Skew != want.Skew || dec.Clamped != want.Clamped {
				t.Errorf("%s: decision %+v, want the header policy's %+v", name, dec, want)
				continue
			}
			dl, ok := ctx.Deadline()
			if (want.Source != 0) != ok {
				t.Errorf("%s: deadline placed %v, want %v", name, ok, want.Source != 0)
				continue
			}
			if slack := end.Sub(start) + time.Microsecond; ok && (dl.Before(want.Deadline.Add(-slack)) || dl.After(want.Deadline.Add(slack))) {
				t.Errorf("%s: deadline %v, want the header policy's %v", name, dl, want.Deadline)
			}
			if ok && want.Reason == wire.ReasonExpired && !errors.Is(context.Cause(ctx), budget.ErrExpired) {
				t.Errorf("%s: an expired member left the context running", name)
			}
		}
	}
}

// TestPropagatorNilPolicy: with reading turned off, Extract places nothing
// and still drops the member; Inject still writes.
func TestPropagatorNilPolicy(t *testing.T) {
	t.Parallel()
	prop := otelbudget.NewPropagator(otelbudget.WithPolicy(nil))
	h := http.Header{"Baggage": {otelbudget.BaggageKey + "=" + unixMs(time.Now().Add(time.Second)) + ",a=b"}}
	ctx := prop.Extract(context.Background(), propagation.HeaderCarrier(h))
	if _, ok := ctx.Deadline(); ok {
		t.Error("a deadline was placed with reading off")
	}
	if b := baggage.FromContext(ctx); b.Member(otelbudget.BaggageKey).Key() != "" || b.Member("a").Value() != "b" {
		t.Errorf("baggage %q, want a=b alone", b)
	}
	var zero otelbudget.Propagator // the zero value decides under the zero policy
	if _, ok := zero.Extract(context.Background(), propagation.HeaderCarrier(h)).Deadline(); !ok {
		t.Error("the zero Propagator placed no deadline")
	}
}

// TestPropagatorInvalidPolicy: an invalid policy is a setup mistake.
func TestPropagatorInvalidPolicy(t *testing.T) {
	t.Parallel()
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, budget.ErrMisconfigured) || !errors.Is(err, wire.ErrInvalidPolicy) {
			t.Errorf("recovered %v, want ErrMisconfigured and ErrInvalidPolicy", err)
		}
	}()
	otelbudget.NewPropagator(otelbudget.WithPolicy(&wire.Policy{Max: -1}))
}

// TestPropagatorCriticality: the request's class travels as the
// budget-criticality member when it is not the default, and is read back
// onto the context under the Request-Criticality trust rule: an edge that
// trusts nothing ignores it, a malformed value is counted and ignored.
func TestPropagatorCriticality(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	h := http.Header{}
	otelbudget.NewPropagator().Inject(budget.WithCriticality(ctx, budget.Critical), propagation.HeaderCarrier(h))
	if got := h.Get("baggage"); !strings.Contains(got, otelbudget.BaggageCriticalityKey+"=critical") ||
		!strings.Contains(got, otelbudget.BaggageKey+"=") {
		t.Fatalf("baggage %q, want the deadline and %s=critical", got, otelbudget.BaggageCriticalityKey)
	}
	h2 := http.Header{}
	otelbudget.NewPropagator().Inject(budget.WithCriticality(context.Background(), budget.DefaultCriticality), propagation.HeaderCarrier(h2))
	if got := h2.Get("baggage"); got != "" {
		t.Errorf("default class, no deadline: baggage %q, want none", got)
	}

	for _, tc := range []struct {
		name   string
		policy *wire.Policy
		value  string
		want   budget.Criticality
		read   bool
	}{
		{"trusted", &wire.Policy{}, "critical", budget.Critical, true},
		{"any case", &wire.Policy{}, "SHEDDABLE", budget.Sheddable, true},
		{"edge trusts nothing", &wire.Policy{Trust: wire.SourcesNone}, "critical", budget.DefaultCriticality, false},
		{"deadline trusted, class not", &wire.Policy{Trust: wire.SourceRequestDeadline}, "critical", budget.DefaultCriticality, false},
		{"malformed", &wire.Policy{}, "urgent", budget.DefaultCriticality, true},
	} {
		hdr := http.Header{"Baggage": {otelbudget.BaggageCriticalityKey + "=" + tc.value + ",a=b"}}
		in := otelbudget.NewPropagator(otelbudget.WithPolicy(tc.policy)).Extract(context.Background(), propagation.HeaderCarrier(hdr))
		if got := budget.CriticalityFrom(in); got != tc.want {
			t.Errorf("%s: class %v, want %v", tc.name, got, tc.want)
		}
		dec, read := otelbudget.BaggageDecision(in)
		if read != tc.read || tc.name == "malformed" && dec.Malformed != 1 {
			t.Errorf("%s: decision %+v (%v), want read %v", tc.name, dec, read, tc.read)
		}
		if b := baggage.FromContext(in); b.Member(otelbudget.BaggageCriticalityKey).Key() != "" || b.Member("a").Value() != "b" {
			t.Errorf("%s: baggage %q, want a=b alone", tc.name, b)
		}
	}
}
