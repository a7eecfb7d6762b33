package edge_test

import (
	"context"
	"fmt"
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
