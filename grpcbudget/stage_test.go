package grpcbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
)

// TestClientStage: a call refused before sending names the client's stage
// when WithClientStage sets one, and its method otherwise.
func TestClientStage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts []edge.ClientOption
		want string
	}{
		{nil, "/pkg.Svc/Get"},
		{[]edge.ClientOption{edge.WithClientStage("pricing")}, "pricing"},
	} {
		ctx, cancel := budget.Start(context.Background(), 10*time.Millisecond)
		opts := append(tc.opts, edge.WithMinUseful(time.Second))
		err := grpcbudget.UnaryClientInterceptor(opts...)(ctx, "/pkg.Svc/Get", nil, nil, nil,
			func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
				t.Error("a refused call was sent")
				return nil
			})
		cancel()
		be, ok := errors.AsType[*budget.Error](err)
		if !ok || be.Stage != tc.want {
			t.Errorf("refusal %v, want one naming stage %q", err, tc.want)
		}
	}
}
