// Command service is the middle hop of the end-to-end test: an HTTP server
// that reads the budget the edge sent and calls the backend over gRPC with
// what is left. It prints one report line per request.
package main

import (
	"context"
	"flag"
	"github.com/timebudget/budget/edge"
	"log"
	"net"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/timebudget/budget/e2e/internal/report"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	backend := flag.String("backend", "", "host:port of the backend")
	reserve := flag.Duration("reserve", time.Millisecond, "time kept back to write the answer")
	answerMargin := flag.Duration("margin", 0, "the answer margin: 0 adaptive, negative none")
	flag.Parse()

	conn, err := grpc.NewClient(*backend, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(grpcbudget.UnaryClientInterceptor(grpcbudget.WithBudgetMetadata())))
	if err != nil {
		log.Fatal(err)
	}
	client := grpc_testing.NewTestServiceClient(conn)

	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		line := report.Line{Hop: "service", ID: r.URL.Query().Get("id"), Arrived: report.Wall(arrived)}
		// Measured from arrived, so that a preemption in between does not
		// shorten it.
		if dl, ok := r.Context().Deadline(); ok {
			left := dl.Sub(arrived)
			line.Remaining, line.Deadline = int64(left), report.Wall(arrived.Add(left))
		}
		ctx := metadata.AppendToOutgoingContext(r.Context(), "x-request-id", line.ID)
		line.Sent = report.Wall(time.Now())
		_, err := client.UnaryCall(ctx, &grpc_testing.SimpleRequest{
			Payload: &grpc_testing.Payload{Body: []byte(r.URL.Query().Get("mode"))}})
		line.Answered = r.Context().Err() == nil
		status := httpbudget.StatusOf(ctx, err)
		if err != nil && status == http.StatusInternalServerError {
			status = http.StatusBadGateway
		}
		if status == http.StatusGatewayTimeout {
			w.Header().Set(wire.HeaderBudgetExpired, wire.FormatBudgetExpired("service"))
		}
		w.WriteHeader(status)
		line.Done, line.Status = report.Wall(time.Now()), strconv.Itoa(status)
		report.Print(line)
	})
	h := httpbudget.NewHandler(work, edge.WithStage("service"), edge.WithAnswerMargin(*answerMargin),
		edge.WithPolicy(&wire.Policy{AnswerMargin: *reserve}))

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	// Connect before the first request, so that it does not pay the dial.
	conn.Connect()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, _ = client.EmptyCall(ctx, &grpc_testing.Empty{})
	cancel()
	report.Print(report.Line{Listen: ln.Addr().String()})
	log.Fatal((&http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}).Serve(ln))
}
