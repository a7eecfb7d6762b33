// Command backend is the last hop of the end-to-end test: a gRPC server
// (grpc-go's interop TestService) whose UnaryCall does the request's work
// under the budget that reached it. The payload body picks the work:
//
//	"work"      a dependency that answers in -work
//	"hang"      a dependency that never answers; only the deadline ends it
//	"stubborn"  a dependency that works -stubborn whatever its context says
//
// Every piece of work is tracked by an orphan-work probe, and the report line
// of each request carries what the probe measured.
package main

import (
	"context"
	"flag"
	"github.com/timebudget/budget/edge"
	"log"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/timebudget/budget/budgettest"
	"github.com/timebudget/budget/e2e/internal/report"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

type backend struct {
	grpc_testing.UnimplementedTestServiceServer
	probe *budgettest.Probe
	deps  map[string]*budgettest.Dependency
}

func (b *backend) EmptyCall(context.Context, *grpc_testing.Empty) (*grpc_testing.Empty, error) {
	return &grpc_testing.Empty{}, nil
}

func (b *backend) UnaryCall(ctx context.Context, req *grpc_testing.SimpleRequest) (*grpc_testing.SimpleResponse, error) {
	arrived := time.Now()
	line := report.Line{Hop: "backend", Arrived: report.Wall(arrived)}
	if v := metadata.ValueFromIncomingContext(ctx, "x-request-id"); len(v) > 0 {
		line.ID = v[0]
	}
	// Measured from arrived, so that a preemption in between does not
	// shorten it.
	if dl, ok := ctx.Deadline(); ok {
		left := dl.Sub(arrived)
		line.Remaining, line.Deadline = int64(left), report.Wall(arrived.Add(left))
	}
	dep := b.deps[string(req.GetPayload().GetBody())]
	if dep == nil {
		dep = b.deps["work"]
	}
	stop := b.probe.Track(ctx)
	err := dep.Call(ctx)
	rec := stop()
	line.WorkStart, line.GaveUp, line.WorkStop = report.Wall(rec.Start), report.Wall(rec.GaveUp), report.Wall(rec.Stop)
	line.Orphaned = int64(rec.Orphaned())
	if past, ok := rec.PastDeadline(); ok {
		line.PastDeadline = int64(past)
	}
	line.Done = report.Wall(time.Now())
	line.Status = grpcbudget.CodeOf(ctx, err).String()
	report.Print(line)
	if err != nil {
		return nil, err
	}
	return &grpc_testing.SimpleResponse{}, nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	reserve := flag.Duration("reserve", time.Millisecond, "time kept back to write the answer")
	answerMargin := flag.Duration("margin", 0, "the answer margin: 0 adaptive, negative none")
	work := flag.Duration("work", 2*time.Millisecond, "how long a normal request works")
	stubborn := flag.Duration("stubborn", 300*time.Millisecond, "how long stubborn work runs")
	flag.Parse()

	b := &backend{probe: new(budgettest.Probe), deps: map[string]*budgettest.Dependency{
		"work":     {Delay: *work},
		"hang":     {Hang: true},
		"stubborn": {Delay: *stubborn, IgnoreContext: true},
	}}
	policy := edge.WithPolicy(&wire.Policy{AnswerMargin: *reserve})
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(grpcbudget.UnaryServerInterceptor(policy, edge.WithStage("backend"),
		edge.WithAnswerMargin(*answerMargin))))
	grpc_testing.RegisterTestServiceServer(srv, b)

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	report.Print(report.Line{Listen: ln.Addr().String()})
	log.Fatal(srv.Serve(ln))
}
