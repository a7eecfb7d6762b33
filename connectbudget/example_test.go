package connectbudget_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/wire"
)

func ExampleNewServerInterceptor() {
	// What connect-go cannot say on its own: at most 2 s whatever the client
	// asks, nothing started with under 50 ms, 100 ms kept to answer.
	policy := &wire.Policy{Max: 2 * time.Second, Min: 50 * time.Millisecond, AnswerMargin: 100 * time.Millisecond}
	mux := http.NewServeMux()
	mux.Handle("/acme.v1.Checkout/Pay", connect.NewUnaryHandler("/acme.v1.Checkout/Pay",
		func(ctx context.Context, _ *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
			left, _ := budget.Remaining(ctx)
			fmt.Println("handler has", left.Round(100*time.Millisecond))
			return connect.NewResponse(wrapperspb.String("paid")), nil
		},
		connect.WithInterceptors(connectbudget.NewServerInterceptor(
			edge.WithPolicy(policy), edge.WithStage("checkout")))))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](srv.Client(),
		srv.URL+"/acme.v1.Checkout/Pay", connect.WithInterceptors(connectbudget.NewClientInterceptor()))
	for _, timeout := range []time.Duration{5 * time.Second, 20 * time.Millisecond} {
		ctx, cancel := budget.Start(context.Background(), timeout)
		_, err := client.CallUnary(ctx, connect.NewRequest(wrapperspb.String("order 42")))
		cancel()
		if err != nil {
			fmt.Println(connect.CodeOf(err), err)
		}
	}
	// Output:
	// handler has 1.9s
	// deadline_exceeded deadline_exceeded: budget: checkout refused on arrival: too little time left (not retried: the server refused it on arrival and asked not to retry)
}

// A bidirectional stream whose messages each get 100 ms: a message whose
// handling hangs is given up at its budget, and the stream goes on.
func ExampleMessageContext() {
	mux := http.NewServeMux()
	mux.Handle("/acme.v1.Chat/Talk", connect.NewBidiStreamHandler("/acme.v1.Chat/Talk",
		func(ctx context.Context, st *connect.BidiStream[wrapperspb.StringValue, wrapperspb.StringValue]) error {
			for {
				m, err := st.Receive()
				if errors.Is(err, io.EOF) {
					return nil
				} else if err != nil {
					return err
				}
				answer := "answered " + m.GetValue()
				if m.GetValue() == "hard question" {
					mctx, cancel := connectbudget.MessageContext(ctx)
					<-mctx.Done() // stuck on this one
					cancel()
					answer = "gave up on " + m.GetValue()
				}
				if err := st.Send(wrapperspb.String(answer)); err != nil {
					return err
				}
			}
		},
		connect.WithInterceptors(connectbudget.NewServerInterceptor(connectbudget.WithMessageBudget(100*time.Millisecond)))))
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()

	client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](srv.Client(), srv.URL+"/acme.v1.Chat/Talk")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := client.CallBidiStream(ctx)
	for _, q := range []string{"hello", "hard question", "goodbye"} {
		if err := st.Send(wrapperspb.String(q)); err != nil {
			fmt.Println(err)
			return
		}
		m, err := st.Receive()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(m.GetValue())
	}
	_ = st.CloseRequest()
	_ = st.CloseResponse()
	// Output:
	// answered hello
	// gave up on hard question
	// answered goodbye
}

// A public edge classifies calls by procedure, since it trusts nothing a
// client sends; its client interceptor passes the class on to the services
// behind it, whose handlers read it with budget.CriticalityFrom.
func ExampleWithClassifier() {
	const pay = "/acme.v1.Checkout/Pay"
	backend := http.NewServeMux()
	backend.Handle(pay, connect.NewUnaryHandler(pay,
		func(ctx context.Context, _ *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
			fmt.Println("backend runs the call as", budget.CriticalityFrom(ctx))
			return connect.NewResponse(wrapperspb.String("paid")), nil
		},
		connect.WithInterceptors(connectbudget.NewServerInterceptor()))) // trusts Request-Criticality
	backendSrv := httptest.NewServer(backend)
	defer backendSrv.Close()
	toBackend := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](backendSrv.Client(),
		backendSrv.URL+pay, connect.WithInterceptors(connectbudget.NewClientInterceptor()))

	front := http.NewServeMux()
	front.Handle(pay, connect.NewUnaryHandler(pay,
		func(ctx context.Context, r *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
			return toBackend.CallUnary(ctx, connect.NewRequest(r.Msg))
		},
		connect.WithInterceptors(connectbudget.NewServerInterceptor(
			edge.WithPolicy(&wire.Policy{Trust: wire.SourcesNone, Max: 2 * time.Second}),
			connectbudget.WithClassifier(func(_ context.Context, procedure string) budget.Criticality {
				if procedure == pay {
					return budget.Critical
				}
				return budget.Sheddable
			})))))
	edgeSrv := httptest.NewServer(front)
	defer edgeSrv.Close()

	client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](edgeSrv.Client(), edgeSrv.URL+pay)
	req := connect.NewRequest(wrapperspb.String("order 42"))
	req.Header().Set(wire.HeaderRequestCriticality, "sheddable") // ignored by the edge
	if _, err := client.CallUnary(context.Background(), req); err != nil {
		fmt.Println(err)
	}
	// Output:
	// backend runs the call as critical
}
