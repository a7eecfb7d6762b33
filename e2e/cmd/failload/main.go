// Command failload measures what a failing request costs at high
// concurrency: N concurrent requests go client → edge → backend over
// loopback HTTP, in one process, to a backend that hangs until its request's
// context ends, with 100 ms budgets. Two patterns run side by side, each on
// servers and connection pools of its own, built fresh for each N:
//
//	budget  the client starts a budget (budget.Start) and sends through
//	        httpbudget.NewTransport; the edge and the backend are
//	        httpbudget.NewHandler; the edge calls the backend with
//	        r.Context() through httpbudget.NewTransport and answers an error
//	        with httpbudget.WriteError.
//	plain   plain Go: context.WithTimeout at the client and at the edge, a
//	        plain http.Transport, no headers; the edge answers an error with
//	        504.
//
// For each N, every pattern is prepared on servers of its own: one hanging
// request alone and -learn unmeasured rounds of N hanging requests (1 by
// default) let the adaptive answer margins and the Transports' memory of
// their hosts learn, as a running service's would; one round of N requests
// to a backend that answers after 20 ms then opens N connections at each
// hop. Then -rounds rounds of N hanging requests are measured, one
// pattern's round after the other's, without warming again in between: a
// connection a round closes is dialled again by the next. When the
// open-file limit cannot hold both patterns' connections at once (or
// -cpuprofile is set), each pattern is prepared and measured on its own,
// one after the other.
//
// Over the measured rounds it reports: the client's overshoot (the time its
// call took, less the budget; negative is an answer inside the budget) at
// p50, p99 and max; the process's CPU time (getrusage) and heap allocations
// (runtime.MemStats Mallocs) from the start of a round until every client
// has its answer, divided by the requests; the connections the edge dialled
// toward the backend (counted by the edge transport's DialContext) and the
// client toward the edge; and the peak number of goroutines, sampled every
// millisecond.
//
// Both ends of every connection are in this process, so N concurrent
// requests need about 4N open files; failload raises its RLIMIT_NOFILE
// itself and stops with a message saying so when it cannot.
//
// Usage:
//
//	go run ./cmd/failload -n 1000,10000 -rounds 3 -json failload.json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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

// Result is what one pattern measured at one concurrency, over its
// measured rounds.
type Result struct {
	Pattern          string  `json:"pattern"`
	Concurrency      int     `json:"concurrency"`
	Rounds           int     `json:"rounds"`
	Failures         int     `json:"failures"`
	OvershootP50Ms   float64 `json:"overshoot_p50_ms"`
	OvershootP99Ms   float64 `json:"overshoot_p99_ms"`
	OvershootMaxMs   float64 `json:"overshoot_max_ms"`
	CPUMsPerFailure  float64 `json:"cpu_ms_per_failure"`
	AllocsPerFailure float64 `json:"allocs_per_failure"`
	Dials            int64   `json:"dials"`
	// ClientDials counts the connections the client dialled to the edge.
	ClientDials    int64 `json:"client_dials"`
	GoroutinesPeak int   `json:"goroutines_peak"`
	// Answers counts the client's outcomes: "expired" a 504 (with
	// Budget-Expired in the budget pattern), "timer" the client's own
	// deadline, "ok" a 200 (a failure read as success), "other" the rest.
	Answers map[string]int `json:"answers"`
}

// Report is the JSON document -json writes.
type Report struct {
	BudgetMs   float64  `json:"budget_ms"`
	GOMAXPROCS int      `json:"gomaxprocs"`
	LoadBefore string   `json:"load_before"`
	LoadAfter  string   `json:"load_after"`
	Results    []Result `json:"results"`
}

// config is what one run measures.
type config struct {
	ns       []int
	patterns []string
	rounds   int
	learn    int
	budget   time.Duration
	profile  string // CPU profile of the measured rounds to profile.PATTERN.N
}

func main() {
	ns := flag.String("n", "1000,10000", "comma-separated concurrencies (requests in flight at once)")
	rounds := flag.Int("rounds", 3, "measured rounds of N hanging requests per pattern and N")
	learn := flag.Int("learn", 1, "unmeasured rounds of N hanging requests first, from which margins and linger learn, as a running service's do")
	total := flag.Duration("budget", 100*time.Millisecond, "the budget of every request")
	patterns := flag.String("patterns", "budget,plain", "patterns to run, in order")
	jsonOut := flag.String("json", "", "write the report as JSON to this file")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of each pattern's measured rounds to FILE.PATTERN.N")
	memprofile := flag.String("memprofile", "", "write an allocation profile to this file at the end")
	flag.Parse()
	cfg := config{patterns: strings.Split(*patterns, ","), rounds: *rounds, learn: *learn, budget: *total, profile: *cpuprofile}
	for _, s := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			log.Fatalf("failload: -n %q: %q is not a positive number of requests", *ns, s)
		}
		cfg.ns = append(cfg.ns, n)
	}
	if *rounds < 1 {
		log.Fatalf("failload: -rounds %d: at least one round is needed", *rounds)
	}
	// Every pattern's connections at once, to interleave their rounds; or,
	// failing that, one pattern's at a time.
	if raiseFiles(uint64(filesFor(slices.Max(cfg.ns))*len(cfg.patterns))) != nil {
		if err := raiseFiles(uint64(filesFor(slices.Max(cfg.ns)))); err != nil {
			log.Fatal(err)
		}
	}
	rep, err := run(cfg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(rep.table())
	if *memprofile != "" {
		if err := writeHeapProfile(*memprofile); err != nil {
			log.Fatal(err)
		}
	}
	if *jsonOut != "" {
		if err := rep.write(*jsonOut); err != nil {
			log.Fatal(err)
		}
	}
}

// write writes the report as indented JSON to the file name.
func (rep *Report) write(name string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(b, '\n'), 0o644)
}

func writeHeapProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}

// run measures every pattern at every concurrency of cfg.
func run(cfg config) (*Report, error) {
	for _, p := range cfg.patterns {
		if p != "budget" && p != "plain" {
			return nil, fmt.Errorf("failload: unknown pattern %q (want budget or plain)", p)
		}
	}
	rep := &Report{BudgetMs: load.Ms(cfg.budget), GOMAXPROCS: runtime.GOMAXPROCS(0), LoadBefore: load.LoadAvg()}
	for _, n := range cfg.ns {
		res, err := measure(n, cfg)
		if err != nil {
			return nil, fmt.Errorf("failload: at %d: %w", n, err)
		}
		rep.Results = append(rep.Results, res...)
	}
	rep.LoadAfter = load.LoadAvg()
	return rep, nil
}

// rig is one pattern's client, edge and backend.
type rig struct {
	pattern string
	budget  time.Duration
	client  *http.Client
	edgeURL string
	hang    atomic.Bool  // the backend hangs and the plain edge's timeout is the budget; otherwise it answers after 20 ms
	dials   atomic.Int64 // by the edge, toward the backend
	cdials  atomic.Int64 // by the client, toward the edge
	servers []*http.Server
	pools   []*http.Transport
	running atomic.Int64 // backend handlers still running
}

func newRig(pattern string, n int, total time.Duration) (*rig, error) {
	r := &rig{pattern: pattern, budget: total}
	backend := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.running.Add(1)
		defer r.running.Add(-1)
		if r.hang.Load() {
			<-req.Context().Done()
			return
		}
		time.Sleep(20 * time.Millisecond)
		_, _ = io.WriteString(w, "ok")
	})
	toBackend := load.Pool(n)
	dial := toBackend.DialContext
	toBackend.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		r.dials.Add(1)
		return dial(ctx, network, addr)
	}
	toEdge := load.Pool(n)
	cdial := toEdge.DialContext
	toEdge.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		r.cdials.Add(1)
		return cdial(ctx, network, addr)
	}
	r.pools = []*http.Transport{toBackend, toEdge}
	var backendURL string
	var edgeH, backendH http.Handler
	switch pattern {
	case "budget":
		up := &http.Client{Transport: httpbudget.NewTransport(toBackend)}
		edgeH = httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			relay(w, req, up, backendURL, httpbudget.WriteError)
		}))
		backendH = httpbudget.NewHandler(backend)
		r.client = &http.Client{Transport: httpbudget.NewTransport(toEdge)}
	default:
		up := &http.Client{Transport: toBackend}
		edgeH = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			timeout := 10 * time.Second // the warm-up's
			if r.hang.Load() {
				timeout = total
			}
			ctx, cancel := context.WithTimeout(req.Context(), timeout)
			defer cancel()
			relay(w, req.WithContext(ctx), up, backendURL, func(w http.ResponseWriter, err error) {
				http.Error(w, "the request ran out of time", http.StatusGatewayTimeout)
			})
		})
		backendH = backend
		r.client = &http.Client{Transport: toEdge}
	}
	for i, h := range []http.Handler{backendH, edgeH} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			r.close()
			return nil, err
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
		r.servers = append(r.servers, srv)
		go func() { _ = srv.Serve(ln) }()
		if i == 0 {
			backendURL = "http://" + ln.Addr().String() + "/"
		} else {
			r.edgeURL = "http://" + ln.Addr().String() + "/"
		}
	}
	return r, nil
}

// relay is the edge's handler: it calls the backend under the request's
// context and copies its answer, or answers the error with fail.
func relay(w http.ResponseWriter, req *http.Request, up *http.Client, url string, fail func(http.ResponseWriter, error)) {
	out, _ := http.NewRequestWithContext(req.Context(), http.MethodGet, url, nil)
	resp, err := up.Do(out)
	if err != nil {
		fail(w, err)
		return
	}
	defer resp.Body.Close()
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// settle waits, up to 10 s, for the backend's handlers to return.
func (r *rig) settle() {
	for end := time.Now().Add(10 * time.Second); r.running.Load() > 0 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *rig) close() {
	for _, s := range r.servers {
		_ = s.Close()
	}
	for _, p := range r.pools {
		p.CloseIdleConnections()
	}
}

// call sends one request under the pattern's budget and returns how long
// it took past the budget and how it ended.
func (r *rig) call(timeout time.Duration) (time.Duration, string) {
	start := time.Now()
	var ctx context.Context
	var cancel context.CancelFunc
	if r.pattern == "budget" {
		ctx, cancel = budget.Start(context.Background(), timeout)
	} else {
		ctx, cancel = context.WithTimeout(context.Background(), timeout)
	}
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.edgeURL, nil)
	resp, err := r.client.Do(req)
	over := time.Since(start) - timeout
	switch {
	case errors.Is(err, httpbudget.ErrUpstreamExpired):
		return over, "expired"
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		return over, "timer"
	case err != nil:
		return over, "other"
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		return over, "ok"
	case resp.StatusCode == http.StatusGatewayTimeout && (r.pattern == "plain" || resp.Header.Get(wire.HeaderBudgetExpired) != ""):
		return over, "expired"
	}
	return over, "other"
}

// burst sends n requests at once, each with the given timeout, and
// returns their overshoots and outcomes.
func (r *rig) burst(n int, timeout time.Duration) ([]time.Duration, map[string]int) {
	over := make([]time.Duration, n)
	kinds := make([]string, n)
	var wg sync.WaitGroup
	var ready, gate sync.WaitGroup
	ready.Add(n)
	gate.Add(1)
	for i := range n {
		wg.Go(func() {
			ready.Done()
			gate.Wait()
			over[i], kinds[i] = r.call(timeout)
		})
	}
	ready.Wait()
	gate.Done()
	wg.Wait()
	answers := map[string]int{}
	for _, k := range kinds {
		answers[k]++
	}
	return over, answers
}

// measure measures the patterns at n: each on a rig of its own, prepared
// (see prepare), then cfg.rounds bursts of n hanging requests per pattern.
// When the open-file limit holds every pattern's connections at once and no
// CPU profile is asked for, the patterns' rounds are interleaved, so that
// each pattern sees the machine in the same state; otherwise the patterns
// are measured one after the other, each on its own.
func measure(n int, cfg config) ([]Result, error) {
	if cfg.profile != "" || filesFor(n)*len(cfg.patterns) > load.FileLimit() {
		var out []Result
		for _, p := range cfg.patterns {
			res, err := measureGroup([]string{p}, n, cfg)
			if err != nil {
				return nil, err
			}
			out = append(out, res...)
		}
		return out, nil
	}
	return measureGroup(cfg.patterns, n, cfg)
}

// measureGroup measures patterns at n together, their rounds interleaved.
func measureGroup(patterns []string, n int, cfg config) ([]Result, error) {
	var rigs []*rig
	defer func() {
		for _, r := range rigs {
			r.close()
		}
	}()
	for _, p := range patterns {
		r, err := newRig(p, n, cfg.budget)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		rigs = append(rigs, r)
		if err := r.prepare(n, cfg.learn); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	if cfg.profile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%s.%d", cfg.profile, strings.Join(patterns, "+"), n))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	accs := make([]*accum, len(rigs))
	for i, r := range rigs {
		accs[i] = &accum{res: Result{Pattern: r.pattern, Concurrency: n, Rounds: cfg.rounds, Answers: map[string]int{}}}
	}
	for range cfg.rounds {
		for i, r := range rigs {
			r.round(n, accs[i])
		}
	}
	out := make([]Result, len(accs))
	for i, a := range accs {
		out[i] = a.result()
	}
	return out, nil
}

// prepare sends one hanging request alone, then learn bursts of n hanging
// requests, unmeasured, and warms n connections at each hop with n requests
// that succeed.
func (r *rig) prepare(n, learn int) error {
	r.hang.Store(true)
	// One failure alone first, answered in time: the client's and the
	// edge's Transports see their hosts refuse with Budget-Expired, as a
	// running service has seen failures before a burst.
	if learn > 0 {
		r.burst(1, r.budget)
		r.settle()
	}
	for range learn {
		r.burst(n, r.budget)
		r.settle()
	}
	r.hang.Store(false)
	if _, answers := r.burst(n, 10*time.Second); answers["ok"] != n {
		return fmt.Errorf("warm-up: %d of %d requests succeeded (%v)", answers["ok"], n, answers)
	}
	r.hang.Store(true)
	return nil
}

// accum adds up a pattern's measured rounds.
type accum struct {
	res    Result
	overs  []time.Duration
	cpu    time.Duration
	allocs uint64
}

// round measures one burst of n hanging requests into a.
func (r *rig) round(n int, a *accum) {
	time.Sleep(200 * time.Millisecond) // let the previous round's stragglers go
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	dials, cdials := r.dials.Load(), r.cdials.Load()
	stop := sampleGoroutines()
	c0 := load.CPUTime()
	over, answers := r.burst(n, r.budget)
	a.cpu += load.CPUTime() - c0
	a.res.GoroutinesPeak = max(a.res.GoroutinesPeak, stop())
	runtime.ReadMemStats(&m1)
	a.allocs += m1.Mallocs - m0.Mallocs
	a.res.Dials += r.dials.Load() - dials
	a.res.ClientDials += r.cdials.Load() - cdials
	a.overs = append(a.overs, over...)
	for k, v := range answers {
		a.res.Answers[k] += v
	}
	r.settle()
}

// result is the accumulated rounds' Result.
func (a *accum) result() Result {
	res := a.res
	res.Failures = len(a.overs)
	if res.Failures == 0 {
		return res
	}
	slices.Sort(a.overs)
	res.OvershootP50Ms = load.Ms(load.Quantile(a.overs, 0.50))
	res.OvershootP99Ms = load.Ms(load.Quantile(a.overs, 0.99))
	res.OvershootMaxMs = load.Ms(a.overs[len(a.overs)-1])
	res.CPUMsPerFailure = load.Ms(a.cpu) / float64(res.Failures)
	res.AllocsPerFailure = float64(a.allocs) / float64(res.Failures)
	return res
}

// sampleGoroutines samples runtime.NumGoroutine every millisecond until
// the returned stop is called, which returns the peak.
func sampleGoroutines() (stop func() int) {
	peak := new(atomic.Int64)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if g := int64(runtime.NumGoroutine()); g > peak.Load() {
				peak.Store(g)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int {
		close(done)
		<-finished
		return int(peak.Load())
	}
}

// filesFor is the open files n concurrent requests need: both ends of n
// connections at each of two hops, and some to spare.
func filesFor(n int) int { return 4*n + 500 }

// raiseFiles raises the process's RLIMIT_NOFILE to at least want, or
// says why it cannot.
func raiseFiles(want uint64) error {
	got, err := load.RaiseFiles(want)
	if err == nil {
		return nil
	}
	return fmt.Errorf("failload: %d open files are needed (4 per concurrent request), the limit is %d and raising it failed: %v; "+
		"raise the hard limit (ulimit -Hn, or run with the privilege to) or lower -n", want, got, err)
}

// table renders the report as a Markdown table.
func (rep *Report) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "budget %v ms, GOMAXPROCS %d, load %s → %s\n\n", rep.BudgetMs, rep.GOMAXPROCS, rep.LoadBefore, rep.LoadAfter)
	b.WriteString("| N | pattern | overshoot p50 | p99 | max | CPU ms/failure | allocs/failure | dials (edge) | dials (client) | goroutines peak | answers |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rep.Results {
		keys := make([]string, 0, len(r.Answers))
		for k := range r.Answers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var ans []string
		for _, k := range keys {
			ans = append(ans, fmt.Sprintf("%s %d", k, r.Answers[k]))
		}
		fmt.Fprintf(&b, "| %d | %s | %.1f ms | %.1f ms | %.1f ms | %.3f | %.0f | %d | %d | %d | %s |\n",
			r.Concurrency, r.Pattern, r.OvershootP50Ms, r.OvershootP99Ms, r.OvershootMaxMs,
			r.CPUMsPerFailure, r.AllocsPerFailure, r.Dials, r.ClientDials, r.GoroutinesPeak, strings.Join(ans, ", "))
	}
	return b.String()
}

func init() { log.SetOutput(os.Stderr); log.SetFlags(0) }
