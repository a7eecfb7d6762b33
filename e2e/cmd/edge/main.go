// Command edge is the first hop of the end-to-end test: an HTTP server that
// starts every request's budget itself (it trusts no header a client sends)
// and calls the service, sending the time left. It prints one report line
// per request.
package main

import (
	"errors"
	"flag"
	"github.com/timebudget/budget/edge"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/timebudget/budget/e2e/internal/report"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	service := flag.String("service", "", "base URL of the service")
	total := flag.Duration("budget", 100*time.Millisecond, "the budget of every request")
	reserve := flag.Duration("reserve", time.Millisecond, "time kept back to write the answer")
	answerMargin := flag.Duration("margin", 0, "the answer margin: 0 adaptive, negative none")
	flag.Parse()

	base := httpbudget.NewBaseTransport(httpbudget.Limits{})
	base.MaxIdleConnsPerHost = 64
	client := &http.Client{Transport: httpbudget.NewTransport(base, edge.WithClientStage("service"))}

	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		line := report.Line{Hop: "edge", ID: r.URL.Query().Get("id"), Arrived: report.Wall(arrived)}
		// Measured from arrived, so that a preemption in between does not
		// shorten it.
		if dl, ok := r.Context().Deadline(); ok {
			left := dl.Sub(arrived)
			line.Remaining, line.Deadline = int64(left), report.Wall(arrived.Add(left))
		}
		q := url.Values{"id": {line.ID}, "mode": {r.URL.Query().Get("mode")}}
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, *service+"/work?"+q.Encode(), nil)
		line.Sent = report.Wall(time.Now())
		status := http.StatusOK
		resp, err := client.Do(req)
		// An upstream's Budget-Expired answer is an error here, but still
		// an answer; only our own deadline cancels the call.
		line.Answered = r.Context().Err() == nil && (err == nil || errors.Is(err, httpbudget.ErrUpstreamExpired))
		if err != nil {
			status = httpbudget.StatusOf(r.Context(), err)
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			status = resp.StatusCode
		}
		if status == http.StatusGatewayTimeout {
			w.Header().Set(wire.HeaderBudgetExpired, wire.FormatBudgetExpired("edge"))
		}
		w.WriteHeader(status)
		line.Done, line.Status = report.Wall(time.Now()), strconv.Itoa(status)
		report.Print(line)
	})
	h := httpbudget.NewHandler(work, edge.WithStage("edge"), edge.WithAnswerMargin(*answerMargin),
		edge.WithPolicy(&wire.Policy{Trust: wire.SourcesNone, Default: *total, AnswerMargin: *reserve}))

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	report.Print(report.Line{Listen: ln.Addr().String()})
	log.Fatal((&http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}).Serve(ln))
}
