// Command budgetload measures how failures end under load: N concurrent
// requests cross three HTTP hops on loopback (client → edge → service →
// backend) to a backend that hangs until its context ends, with 100 ms
// budgets. It runs four patterns in the same process, each with its own
// servers and connection pools, their measured rounds interleaved:
//
//	budget   the client starts a budget (budget.Start) and sends through
//	         httpbudget.NewTransport; every hop is an httpbudget.NewHandler
//	         whose handler relays with what is left; the backend's handler
//	         returns on ctx.Done without writing, the most common Go handler.
//	admit    the same, with each relaying hop calling its next hop through a
//	         budget.Op, as the README's services do: the op measures the
//	         next hop and refuses calls it cannot finish in the time left,
//	         and the hop answers them 504 with Budget-Expired at once.
//	shared   budget with no answer margin (edge.WithAnswerMargin(-1)):
//	         every hop's deadline is the client's, so all expire at once.
//	careful  careful Go code: every hop bounds its own work with
//	         context.WithTimeout(r.Context(), budget), plain net/http clients,
//	         and the backend answers 504 when its timeout ends.
//
// Before measuring, -learn rounds of N hanging requests (1 by default) let
// the adaptive answer margins learn the machine, as a running service's
// would; then one round of N requests to a backend that answers after 20 ms
// opens N connections at every hop; then -rounds rounds of N hanging
// requests are measured, one round of each pattern in turn, so that every
// pattern sees the machine in the same state. When the open-file limit
// cannot hold every pattern's connections at once (at N = 1000 each needs
// about 7,000), the patterns are measured in groups that fit, in the order
// given, the patterns of a group interleaved. It prints, per N and pattern:
// the client's time past its budget (p50, p99; negative is an answer inside
// the budget), the
// backend's work after the client's deadline (p99, zero when it stopped
// before), connections opened and closed during the measured rounds (all
// three servers, counted with http.Server.ConnState), and the client's
// answers: a 504 (with Budget-Expired, or any 504 for careful; in brackets
// those that arrived inside the budget), the client's own timer, 200 OK, and
// anything else; the process's CPU time per request over the measured rounds
// (all hops and the client, including the rounds' pauses); and the machine's
// one-minute load average before and after.
//
// Usage:
//
//	go run ./cmd/budgetload -n 100,1000 -rounds 3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/timebudget/budget/edge"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"

	"github.com/timebudget/budget/e2e/internal/load"
)

func main() {
	ns := flag.String("n", "100,1000", "comma-separated numbers of concurrent requests")
	rounds := flag.Int("rounds", 3, "measured rounds of N requests per pattern")
	learn := flag.Int("learn", 1, "unmeasured rounds of N hanging requests first, from which adaptive margins learn")
	total := flag.Duration("budget", 100*time.Millisecond, "the budget of every request")
	patterns := flag.String("patterns", "budget,careful,admit,shared", "patterns to run, in order")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}

	fmt.Printf("GOMAXPROCS %d, %d CPUs, budget %v, %d unmeasured and %d measured rounds per pattern, started %s\n\n",
		runtime.GOMAXPROCS(0), runtime.NumCPU(), *total, *learn, *rounds, time.Now().UTC().Format(time.RFC3339))
	fmt.Println("| N | pattern | over p50 / p99 (ms) | backend orphan p99 (ms) | backend stop p50 (ms) | conns opened / closed | 504 (in budget) | client timer | 200 | other | CPU µs / request | margins p50 edge / service / backend (ms) | load before → after |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, f := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			log.Fatalf("-n: %q is not a positive number", f)
		}
		var names []string
		for _, p := range strings.Split(*patterns, ",") {
			names = append(names, strings.TrimSpace(p))
		}
		// Interleave as many patterns as the open-file limit allows.
		per := max(1, (filesUpTo(uint64(filesPer*n*len(names)+filesSpare))-filesSpare)/(filesPer*n))
		for len(names) > 0 {
			group := names[:min(per, len(names))]
			names = names[len(group):]
			before := load.LoadAvg()
			res, err := run(group, n, *learn, *rounds, *total)
			if err != nil {
				log.Fatal(err)
			}
			after := load.LoadAvg()
			for i, p := range group {
				fmt.Println(res[i].row(n, p) + " " + before + " → " + after + " |")
			}
			runtime.GC()
			time.Sleep(300 * time.Millisecond)
		}
	}
}

// result is what one pattern measured at one N.
type result struct {
	over, orphan, stop                  []time.Duration
	opened, closed                      int64
	expired, inBudget, timer, ok, other int
	otherSeen                           int           // how many of the others were logged
	cpu                                 time.Duration // CPU time per request, all hops
	margins                             [3][]time.Duration
}

func (r *result) row(n int, pattern string) string {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) }
	q := func(d []time.Duration, at float64) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return load.Quantile(s, at)
	}
	return fmt.Sprintf("| %d | %s | %s / %s | %s | %s | %d / %d | %d (%d) | %d | %d | %d | %d | %s / %s / %s |", n, pattern,
		ms(q(r.over, 0.5)), ms(q(r.over, 0.99)), ms(q(r.orphan, 0.99)), ms(q(r.stop, 0.5)),
		r.opened, r.closed, r.expired, r.inBudget, r.timer, r.ok, r.other, r.cpu.Microseconds(),
		ms(q(r.margins[0], 0.5)), ms(q(r.margins[1], 0.5)), ms(q(r.margins[2], 0.5)))
}

// hops is one pattern's three servers and the client's HTTP client.
type hops struct {
	client  *http.Client
	edge    string
	servers []*counted
	// stops[id] is when the backend's work for request id stopped (unix ns).
	stops []atomic.Int64
	// dls[hop][id] is the handler's deadline at hop (edge, service, backend)
	// for request id (unix ns), or zero.
	dls [3][]atomic.Int64
	// warm makes the backend answer after 20 ms instead of hanging.
	warm atomic.Bool
}

// counted is a server counting the connections it accepts and closes.
type counted struct {
	srv            *http.Server
	ln             net.Listener
	opened, closed atomic.Int64
}

func serve(h http.Handler) (*counted, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &counted{ln: ln}
	c.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ConnState: func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			c.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			c.closed.Add(1)
		}
	}}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

func setup(pattern string, n int, total time.Duration) (*hops, error) {
	hs := &hops{stops: make([]atomic.Int64, n)}
	for i := range hs.dls {
		hs.dls[i] = make([]atomic.Int64, n)
	}
	var backend, relay func(next string, stage string) http.Handler
	var wrap func(http.Handler, string) http.Handler
	var client http.RoundTripper
	switch pattern {
	case "budget", "shared", "admit":
		m := time.Duration(0) // adaptive
		if pattern == "shared" {
			m = -1
		}
		wrap = func(h http.Handler, stage string) http.Handler {
			return httpbudget.NewHandler(h, edge.WithStage(stage), edge.WithLedgerCapacity(-1),
				edge.WithAnswerMargin(m))
		}
		relay = func(next, stage string) http.Handler {
			c := &http.Client{Transport: httpbudget.NewTransport(load.Pool(n), edge.WithClientStage(stage))}
			op := &budget.Op{Name: stage}
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hs.saw(r, r.Context(), stage)
				var status int
				if pattern == "admit" {
					status = http.StatusGatewayTimeout
					_ = op.Do(r.Context(), func(ctx context.Context) error {
						status = forward(ctx, c, next+"?"+r.URL.RawQuery)
						if status == http.StatusGatewayTimeout {
							return context.DeadlineExceeded
						}
						return nil
					})
				} else {
					status = forward(r.Context(), c, next+"?"+r.URL.RawQuery)
				}
				if status == http.StatusGatewayTimeout {
					w.Header().Set(wire.HeaderBudgetExpired, wire.FormatBudgetExpired(stage))
				}
				w.WriteHeader(status)
			})
		}
		backend = func(string, string) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if hs.warm.Load() {
					time.Sleep(20 * time.Millisecond)
					return
				}
				hs.saw(r, r.Context(), "backend")
				<-r.Context().Done() // gives up and writes nothing
				hs.stopped(r)
			})
		}
		client = httpbudget.NewTransport(load.Pool(n))
	case "careful":
		wrap = func(h http.Handler, _ string) http.Handler { return h }
		relay = func(next, stage string) http.Handler {
			c := &http.Client{Transport: load.Pool(n)}
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx, cancel := context.WithTimeout(r.Context(), total)
				defer cancel()
				hs.saw(r, ctx, stage)
				w.WriteHeader(forward(ctx, c, next+"?"+r.URL.RawQuery))
			})
		}
		backend = func(string, string) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if hs.warm.Load() {
					time.Sleep(20 * time.Millisecond)
					return
				}
				ctx, cancel := context.WithTimeout(r.Context(), total)
				defer cancel()
				hs.saw(r, ctx, "backend")
				<-ctx.Done()
				hs.stopped(r)
				w.WriteHeader(http.StatusGatewayTimeout)
			})
		}
		client = load.Pool(n)
	default:
		return nil, fmt.Errorf("unknown pattern %q: want budget, admit, shared or careful", pattern)
	}
	b, err := serve(wrap(backend("", "backend"), "backend"))
	if err != nil {
		return nil, err
	}
	s, err := serve(wrap(relay("http://"+b.ln.Addr().String()+"/", "service"), "service"))
	if err != nil {
		return nil, err
	}
	e, err := serve(wrap(relay("http://"+s.ln.Addr().String()+"/", "edge"), "edge"))
	if err != nil {
		return nil, err
	}
	hs.servers = []*counted{e, s, b}
	hs.edge = "http://" + e.ln.Addr().String() + "/"
	hs.client = &http.Client{Transport: client}
	return hs, nil
}

// saw records the deadline of ctx, the handler's at stage, for r.
func (hs *hops) saw(r *http.Request, ctx context.Context, stage string) {
	hop := map[string]int{"edge": 0, "service": 1, "backend": 2}[stage]
	dl, ok := ctx.Deadline()
	if id, err := strconv.Atoi(r.URL.Query().Get("id")); ok && err == nil && id >= 0 && id < len(hs.stops) {
		hs.dls[hop][id].Store(dl.UnixNano())
	}
}

func (hs *hops) stopped(r *http.Request) {
	if id, err := strconv.Atoi(r.URL.Query().Get("id")); err == nil && id >= 0 && id < len(hs.stops) {
		hs.stops[id].Store(time.Now().UnixNano())
	}
}

func (hs *hops) close() {
	for _, c := range hs.servers {
		_ = c.srv.Close()
	}
	hs.client.CloseIdleConnections()
}

// forward makes the outbound request of a relaying hop and returns the
// status to answer with.
func forward(ctx context.Context, c *http.Client, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return http.StatusInternalServerError
	}
	resp, err := c.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, budget.ErrInsufficient) {
			return http.StatusGatewayTimeout
		}
		return http.StatusBadGateway
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// run measures the patterns at n concurrent requests. Each has its own
// servers and pools, set up, taught and warmed up first; then the measured
// rounds interleave the patterns (round 1 of each, then round 2 of each, and
// so on), so that all of them see the machine in the same state.
func run(patterns []string, n, learn, rounds int, total time.Duration) ([]*result, error) {
	hss := make([]*hops, len(patterns))
	for i, p := range patterns {
		hs, err := setup(p, n, total)
		if err != nil {
			return nil, err
		}
		defer hs.close()
		hss[i] = hs
	}
	res := make([]*result, len(patterns))
	opened0, closed0 := make([]int64, len(patterns)), make([]int64, len(patterns))
	for i, hs := range hss {
		for range learn {
			hs.round(patterns[i], n, total, new(result))
		}
		hs.warmUp(n)
		opened0[i], closed0[i] = hs.conns()
		res[i] = new(result)
	}
	for range rounds {
		for i, hs := range hss {
			cpu0 := load.CPUTime()
			hs.round(patterns[i], n, total, res[i])
			res[i].cpu += load.CPUTime() - cpu0
		}
	}
	for i, hs := range hss {
		res[i].cpu /= time.Duration(n * rounds)
		opened, closed := hs.conns()
		res[i].opened, res[i].closed = opened-opened0[i], closed-closed0[i]
	}
	return res, nil
}

// warmUp sends N overlapping requests, which open N connections at every
// hop, to a backend that answers after 20 ms.
func (hs *hops) warmUp(n int) {
	hs.warm.Store(true)
	defer hs.warm.Store(false)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.edge+"?id="+strconv.Itoa(i), nil)
			if resp, err := hs.client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
	wg.Wait()
	time.Sleep(100 * time.Millisecond)
}

// conns returns the connections the three servers opened and closed so far.
func (hs *hops) conns() (opened, closed int64) {
	for _, c := range hs.servers {
		opened, closed = opened+c.opened.Load(), closed+c.closed.Load()
	}
	return opened, closed
}

// round sends N hanging requests at once and adds what they measured to res.
func (hs *hops) round(pattern string, n int, total time.Duration, res *result) {
	for i := range hs.stops {
		hs.stops[i].Store(0)
		for hop := range hs.dls {
			hs.dls[hop][i].Store(0)
		}
	}
	deadlines := make([]time.Time, n)
	start := make(chan struct{})
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			withBudget := context.WithTimeout
			if pattern != "careful" {
				withBudget = budget.Start
			}
			ctx, cancel := withBudget(context.Background(), total)
			defer cancel()
			deadlines[i], _ = ctx.Deadline()
			status, err := hs.get(ctx, i)
			over := time.Since(deadlines[i])
			mu.Lock()
			defer mu.Unlock()
			res.add(over, err, status)
		})
	}
	close(start)
	wg.Wait()
	// The backend's handlers may still be finishing; give them time.
	time.Sleep(500 * time.Millisecond)
	for i := range n {
		prev := deadlines[i].UnixNano()
		for hop := range hs.dls {
			dl := hs.dls[hop][i].Load()
			if dl == 0 {
				break
			}
			res.margins[hop] = append(res.margins[hop], time.Duration(prev-dl))
			prev = dl
		}
		if s := hs.stops[i].Load(); s != 0 {
			past := time.Unix(0, s).Sub(deadlines[i])
			res.stop = append(res.stop, past)
			res.orphan = append(res.orphan, max(past, 0))
		}
	}
}

// get sends request id to the edge and returns its error or status.
func (hs *hops) get(ctx context.Context, id int) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.edge+"?id="+strconv.Itoa(id), nil)
	resp, err := hs.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// add records one request's answer, which came over past its deadline.
func (r *result) add(over time.Duration, err error, status int) {
	r.over = append(r.over, over)
	switch {
	case errors.Is(err, httpbudget.ErrUpstreamExpired) || status == http.StatusGatewayTimeout:
		r.expired++
		if over <= 0 {
			r.inBudget++
		}
	case errors.Is(err, context.DeadlineExceeded):
		r.timer++
	case status == http.StatusOK:
		r.ok++
	default:
		r.other++
		if r.otherSeen < 3 {
			r.otherSeen++
			log.Printf("other answer: status %d, error %v", status, err)
		}
	}
}

// A pattern holds up to N connections at each of its three hops, with both
// ends in this process, and the careful pattern's reconnects add more:
// filesPer files per concurrent request, plus filesSpare for the rest.
const filesPer, filesSpare = 7, 2000

// filesUpTo raises the open-file limit towards want, as far as the process
// may, and returns the limit it has.
func filesUpTo(want uint64) int {
	n, err := load.RaiseFiles(want)
	if n == 0 && err != nil {
		return 1 << 20 // the limit cannot be read: assume enough, as before
	}
	return n
}

func init() { log.SetOutput(os.Stderr); log.SetFlags(0) }
