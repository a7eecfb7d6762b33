package connectbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
)

// TestClientStage: a call refused before sending names the client's stage
// when WithClientStage sets one.
func TestClientStage(t *testing.T) {
	t.Parallel()
	ctx, cancel := budget.Start(context.Background(), 10*time.Millisecond)
	defer cancel()
	ic := connectbudget.NewClientInterceptor(edge.WithClientStage("pricing"), edge.WithMinUseful(time.Second))
	c := connect.NewClient[str, str](nil, "http://127.0.0.1:1/svc/M", connect.WithInterceptors(ic))
	_, err := c.CallUnary(ctx, connect.NewRequest(&str{}))
	be, ok := errors.AsType[*budget.Error](err)
	if !ok || be.Stage != "pricing" {
		t.Errorf("refusal %v, want one naming stage %q", err, "pricing")
	}
}
