package connectbudget_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/idempotency"
)

// A retried call with an idempotency key runs the handler once: the repeat
// gets the first answer, marked replayed.
func ExampleNewIdempotentInterceptor() {
	charges := 0
	mux := http.NewServeMux()
	mux.Handle(unaryProc, connect.NewUnaryHandler(unaryProc, func(ctx context.Context, r *connect.Request[str]) (*connect.Response[str], error) {
		charges++
		return connect.NewResponse(&str{Value: fmt.Sprint("charge #", charges)}), nil
	}, connect.WithInterceptors(
		connectbudget.NewServerInterceptor(),
		connectbudget.NewIdempotentInterceptor(&idempotency.MemoryStore{}))))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := connect.NewClient[str, str](srv.Client(), srv.URL+unaryProc,
		connect.WithInterceptors(connectbudget.NewClientInterceptor()))

	ctx, cancel := budget.Start(context.Background(), 5*time.Second)
	defer cancel()
	ctx = budget.WithIdempotencyKey(ctx) // once per logical call, before any retry
	for range 2 {
		resp, err := client.CallUnary(ctx, connect.NewRequest(&str{Value: "10 EUR"}))
		fmt.Printf("%s, %v, replayed %q\n", resp.Msg.GetValue(), err, resp.Header().Get(connectbudget.HeaderIdempotentReplayed))
	}
	fmt.Println("charges:", charges)
	// Output:
	// charge #1, <nil>, replayed ""
	// charge #1, <nil>, replayed "true"
	// charges: 1
}
