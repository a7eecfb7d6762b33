package edge_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/wire"
)

// CallRequest classifies a call only when the adapter has a classifier, with
// the call's context and name, and marks it Classified then.
func TestCallRequest(t *testing.T) {
	t.Parallel()
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "caller")
	h := wire.Metadata{"grpc-timeout": {"1S"}}
	now := time.Unix(1_700_000_000, 0)

	req := edge.CallRequest(ctx, "/pkg.Svc/Get", h, now, nil)
	if req.Classified || req.Criticality != budget.DefaultCriticality || req.Now != now || req.Header == nil {
		t.Errorf("without a classifier: %+v, want unclassified, the header and now", req)
	}

	var gotName, gotValue string
	classify := func(ctx context.Context, name string) budget.Criticality {
		gotName, gotValue = name, ctx.Value(key{}).(string)
		return budget.Sheddable
	}
	req = edge.CallRequest(ctx, "/pkg.Svc/Get", h, now, classify)
	if !req.Classified || req.Criticality != budget.Sheddable {
		t.Errorf("with a classifier: Classified %v, Criticality %v; want true, sheddable", req.Classified, req.Criticality)
	}
	if gotName != "/pkg.Svc/Get" || gotValue != "caller" {
		t.Errorf("classifier saw name %q and context value %q, want the call's", gotName, gotValue)
	}
	if v := req.Header.Values("grpc-timeout"); !slices.Equal(v, []string{"1S"}) {
		t.Errorf("Header.Values(grpc-timeout) = %q, want [1S]", v)
	}
}

// StampHTTP writes the class other than the default and the probe mark under
// their canonical names, nothing for a plain context, and allocates nothing.
func TestStampHTTP(t *testing.T) {
	bg := context.Background()
	for _, tc := range []struct {
		ctx         context.Context
		class, prob []string
	}{
		{bg, nil, nil},
		{budget.WithCriticality(bg, budget.DefaultCriticality), nil, nil},
		{budget.WithCriticality(bg, budget.Critical), []string{"critical"}, nil},
		{budget.WithCriticality(bg, budget.Sheddable), []string{"sheddable"}, nil},
		{budget.WithProbe(budget.WithCriticality(bg, budget.Sheddable)), []string{"sheddable"}, []string{wire.ProbeValue}},
		{budget.WithProbe(bg), nil, []string{wire.ProbeValue}},
	} {
		h := http.Header{}
		edge.StampHTTP(tc.ctx, h)
		if got := h[wire.HeaderRequestCriticality]; !slices.Equal(got, tc.class) {
			t.Errorf("%s = %q, want %q", wire.HeaderRequestCriticality, got, tc.class)
		}
		if got := h[wire.HeaderBudgetProbe]; !slices.Equal(got, tc.prob) {
			t.Errorf("%s = %q, want %q", wire.HeaderBudgetProbe, got, tc.prob)
		}
		if want := len(tc.class) + len(tc.prob); len(h) != want {
			t.Errorf("header has %d fields, want %d: %v", len(h), want, h)
		}
	}

	// The shared values cannot be grown into by a later append.
	h := http.Header{}
	edge.StampHTTP(budget.WithCriticality(bg, budget.Critical), h)
	h.Add(wire.HeaderRequestCriticality, "sheddable")
	h2 := http.Header{}
	edge.StampHTTP(budget.WithCriticality(bg, budget.Critical), h2)
	if got := h2[wire.HeaderRequestCriticality]; !slices.Equal(got, []string{"critical"}) {
		t.Errorf("after an Add to another request's header: %q, want [critical]", got)
	}

	ctx := budget.WithProbe(budget.WithCriticality(bg, budget.Critical))
	h = http.Header{}
	if n := testing.AllocsPerRun(100, func() { edge.StampHTTP(ctx, h) }); n != 0 {
		t.Errorf("StampHTTP allocates %v times, want 0", n)
	}
}

// An HTTP-carried client stamps the class and the probe mark of the call's
// context onto the request it sends.
func ExampleStampHTTP() {
	ctx := budget.WithCriticality(context.Background(), budget.Sheddable)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://inventory.internal/items", nil)
	edge.StampHTTP(req.Context(), req.Header)
	fmt.Println(req.Header.Get(wire.HeaderRequestCriticality))
	// Output: sheddable
}

// An RPC adapter builds each call's Request with its classifier, then
// decides it with its Arrival.
func ExampleCallRequest() {
	classify := func(_ context.Context, method string) budget.Criticality {
		if method == "/shop.Cart/Checkout" {
			return budget.Critical
		}
		return budget.Sheddable
	}
	md := wire.Metadata{"grpc-timeout": {"500m"}}
	req := edge.CallRequest(context.Background(), "/shop.Cart/Checkout", md, time.Now(), classify)
	fmt.Println(req.Criticality, req.Classified)
	// Output: critical true
}
