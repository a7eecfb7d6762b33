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
// that the backend holds until all N are there, then answers 20 ms later,
// opens N connections at each hop. Then -rounds rounds of N hanging
// requests are measured, one pattern's round after the other's, without
// warming again in between: a connection a round closes is dialled again
// by the next. When the open-file limit cannot hold both patterns'
// connections at once (or -cpuprofile is set), each pattern is prepared and
// measured on its own, one after the other.
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
// With both ends of every connection in one process, N concurrent requests
// need about 4N open files. With -procs always, the edge and the backend of
// each rig run as processes of their own (this binary again, its role in
// FAILLOAD_ROLE; see procs.go), so that the edge, the process that needs
// most, needs 2N and a few; CPU, allocations and goroutines at peak are
// then the sums over the three processes, each measured over the same
// window, with each process's share in per_process. -procs auto (the
// default) runs in one process when its open-file limit can be raised to
// 4N and across processes otherwise; -procs never, in one process.
// failload raises its RLIMIT_NOFILE itself (children inherit it) and stops
// with a message saying how many files are needed when it cannot.
//
// -edges K (with -procs always) runs the edge as K processes, the client
// sending its requests to them in turn, so that each needs 2N/K files: at
// N = 10,000 one edge process needs about 20,032, more than a hard limit of
// 20,000 allows. Dials, CPU and allocations are then summed over the K
// edges, and each has its line in per_process.
//
// Usage:
//
//	go run ./cmd/failload -n 1000,10000 -rounds 3 -procs always -json failload.json
//	go run ./cmd/failload -n 10000 -rounds 3 -procs always -edges 2 -json failload10k.json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
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
	// deadline, "refused" the budget Transport's refusal to send with too
	// little time left, "ok" a 200 (a failure read as success), "other" the
	// rest.
	Answers map[string]int `json:"answers"`
	// Others says what the "other" answers were: each distinct error text
	// (or "status N" for an answer that was neither a 200 nor a 504), with
	// how many times it came, at most maxOthers texts.
	Others map[string]int `json:"others,omitempty"`
	// PerProcess is each process's share when the client, the edge and
	// the backend ran as processes of their own: CPUMsPerFailure,
	// AllocsPerFailure and GoroutinesPeak above are their sums.
	PerProcess []ProcResult `json:"per_process,omitempty"`
}

// ProcResult is one process's share of a Result.
type ProcResult struct {
	Role             string  `json:"role"`
	CPUMsPerFailure  float64 `json:"cpu_ms_per_failure"`
	AllocsPerFailure float64 `json:"allocs_per_failure"`
	GoroutinesPeak   int     `json:"goroutines_peak"`
}

// Report is the JSON document -json writes.
type Report struct {
	// Processes is 1 when the client, the edge and the backend ran in one
	// process, 3 when each ran in a process of its own (-procs), 2 + Edges
	// with more than one edge process.
	Processes int `json:"processes"`
	// Edges is how many processes the edge ran as (-edges).
	Edges       int      `json:"edges"`
	Description string   `json:"description"`
	BudgetMs    float64  `json:"budget_ms"`
	GOMAXPROCS  int      `json:"gomaxprocs"`
	LoadBefore  string   `json:"load_before"`
	LoadAfter   string   `json:"load_after"`
	Results     []Result `json:"results"`
}

// config is what one run measures.
type config struct {
	ns       []int
	patterns []string
	rounds   int
	learn    int
	budget   time.Duration
	profile  string // CPU profile of the measured rounds to profile.PATTERN.N
	procs    bool   // the edge and the backend run as processes of their own
	edges    int    // the edge's processes, with procs; 1 otherwise
}

// The report's description, by the number of processes.
const (
	describeOne = "client, edge and backend in one process; CPU (getrusage) and allocations (runtime.MemStats Mallocs) " +
		"are the process's from the start of a round until every client has its answer, per failure; goroutines_peak is the process's"
	describeThree = "client, edge and backend each in a process of its own; CPU (getrusage) and allocations (runtime.MemStats Mallocs) " +
		"are the sums over the three processes, each measured from before a round's burst until after its last answer, per failure; " +
		"goroutines_peak is the sum of the three processes' peaks; per_process gives each one's share; dials are the edge process's"
)

func main() {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(serveRole(role))
	}
	ns := flag.String("n", "1000,10000", "comma-separated concurrencies (requests in flight at once)")
	rounds := flag.Int("rounds", 3, "measured rounds of N hanging requests per pattern and N")
	learn := flag.Int("learn", 1, "unmeasured rounds of N hanging requests first, from which margins and linger learn, as a running service's do")
	total := flag.Duration("budget", 100*time.Millisecond, "the budget of every request")
	patterns := flag.String("patterns", "budget,plain", "patterns to run, in order")
	jsonOut := flag.String("json", "", "write the report as JSON to this file")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of each pattern's measured rounds to FILE.PATTERN.N")
	memprofile := flag.String("memprofile", "", "write an allocation profile to this file at the end")
	procs := flag.String("procs", "auto", "run the edge and the backend as processes of their own: always, never, or auto (when one process cannot have the open files it needs)")
	edges := flag.Int("edges", 1, "with -procs always, run the edge as this many processes, the client sending to them in turn")
	flag.Parse()
	cfg := config{patterns: strings.Split(*patterns, ","), rounds: *rounds, learn: *learn, budget: *total, profile: *cpuprofile, edges: *edges}
	var err error
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
	if *edges < 1 || *edges > 1 && *procs != "always" {
		log.Fatalf("failload: -edges %d: want 1, or more with -procs always", *edges)
	}
	if cfg.procs, err = chooseProcs(*procs, slices.Max(cfg.ns), len(cfg.patterns), *edges); err != nil {
		log.Fatal(err)
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
	cfg.edges = max(cfg.edges, 1)
	rep := &Report{Processes: 1, Edges: 1, Description: describeOne, BudgetMs: load.Ms(cfg.budget), GOMAXPROCS: runtime.GOMAXPROCS(0), LoadBefore: load.LoadAvg()}
	if cfg.procs {
		rep.Processes, rep.Edges, rep.Description = 2+cfg.edges, cfg.edges, describeThree
		if cfg.edges > 1 {
			rep.Description = strings.NewReplacer("the three processes", fmt.Sprintf("the %d processes", rep.Processes),
				"the edge process's", "the edge processes'").Replace(describeThree)
		}
	} else if cfg.edges > 1 {
		return nil, fmt.Errorf("failload: %d edge processes need the edge and the backend in processes of their own", cfg.edges)
	}
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
	edges   []string     // the edge's URLs, one per edge process
	turn    atomic.Int64 // which edge the next call goes to
	hang    atomic.Bool  // the backend hangs and the plain edge's timeout is the budget; otherwise it answers the warm-up
	dials   atomic.Int64 // by the edge, toward the backend
	cdials  atomic.Int64 // by the client, toward the edge
	servers []*http.Server
	pools   []*http.Transport
	running atomic.Int64  // backend handlers still running
	warmN   int64         // the warm-up's concurrent requests, which wait for one another at the backend
	warmed  chan struct{} // closed when warmN backend handlers run at once
	warmOne sync.Once
	kids    []*child // with -procs, the backend's and the edge's processes, in that order

	othersMu sync.Mutex
	others   map[string]int // what the "other" answers since the round began were
}

// maxOthers bounds the distinct texts of "other" answers a Result keeps.
const maxOthers = 10

// other records the text of an "other" answer and returns "other".
func (r *rig) other(why string) string {
	r.othersMu.Lock()
	defer r.othersMu.Unlock()
	r.others = countOther(r.others, why, 1)
	return "other"
}

// countOther adds n to why's count in m, unless m already holds maxOthers
// other texts, and returns m (made when nil).
func countOther(m map[string]int, why string, n int) map[string]int {
	if _, ok := m[why]; ok || len(m) < maxOthers {
		if m == nil {
			m = map[string]int{}
		}
		m[why] += n
	}
	return m
}

// newRig builds a pattern's rig for n concurrent requests: its backend
// and edge served in this process, or, with procs, each started as a
// process of its own (see startChild).
func newRig(pattern string, n int, total time.Duration, procs bool, edges int) (*rig, error) {
	r := &rig{pattern: pattern, budget: total, warmN: int64(n), warmed: make(chan struct{})}
	if procs {
		backend, err := startChild("backend", pattern, n, total, "")
		if err != nil {
			return nil, err
		}
		r.kids = append(r.kids, backend)
		for i := range max(edges, 1) {
			edge, err := startChild("edge", pattern, perEdge(n, edges), total, backend.url)
			if err != nil {
				r.close()
				return nil, err
			}
			if edges > 1 {
				edge.name = fmt.Sprintf("edge %d", i+1)
			}
			r.kids = append(r.kids, edge)
			r.edges = append(r.edges, edge.url)
		}
	} else {
		backendURL, err := r.serve(r.backendHandler())
		if err != nil {
			r.close()
			return nil, err
		}
		edgeURL, err := r.serve(r.edgeHandler(n, backendURL))
		if err != nil {
			r.close()
			return nil, err
		}
		r.edges = []string{edgeURL}
	}
	toEdge := load.Pool(n)
	cdial := toEdge.DialContext
	toEdge.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		r.cdials.Add(1)
		return cdial(ctx, network, addr)
	}
	r.pools = append(r.pools, toEdge)
	if pattern == "budget" {
		r.client = &http.Client{Transport: httpbudget.NewTransport(toEdge)}
	} else {
		r.client = &http.Client{Transport: toEdge}
	}
	return r, nil
}

// backendHandler is the pattern's backend: it hangs until its request's
// context ends, or answers the warm-up (warmTogether) when r.hang is off.
func (r *rig) backendHandler() http.Handler {
	backend := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		running := r.running.Add(1)
		defer r.running.Add(-1)
		if r.hang.Load() {
			<-req.Context().Done()
			return
		}
		r.warmTogether(running)
		_, _ = io.WriteString(w, "ok")
	})
	if r.pattern == "budget" {
		return httpbudget.NewHandler(backend)
	}
	return backend
}

// warmTogether holds a request of the warm-up, the running-th backend
// handler at once, until warmN run at once (up to 5 s), then 20 ms more. So
// every hop opens warmN connections: requests answered after a fixed time
// overlap only as much as the client sends them together, and a warm-up
// that opened fewer connections than a burst needs shows up as the burst's
// dials.
func (r *rig) warmTogether(running int64) {
	if running >= r.warmN {
		r.warmOne.Do(func() { close(r.warmed) })
	}
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-r.warmed:
	case <-t.C:
	}
	time.Sleep(20 * time.Millisecond)
}

// edgeHandler is the pattern's edge, calling the backend at backendURL
// through a pool of its own for n concurrent requests, whose dials it
// counts in r.dials.
func (r *rig) edgeHandler(n int, backendURL string) http.Handler {
	toBackend := load.Pool(n)
	dial := toBackend.DialContext
	toBackend.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		r.dials.Add(1)
		return dial(ctx, network, addr)
	}
	r.pools = append(r.pools, toBackend)
	if r.pattern == "budget" {
		up := &http.Client{Transport: httpbudget.NewTransport(toBackend)}
		return httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			relay(w, req, up, backendURL, httpbudget.WriteError)
		}))
	}
	up := &http.Client{Transport: toBackend}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		timeout := 10 * time.Second // the warm-up's
		if r.hang.Load() {
			timeout = r.budget
		}
		ctx, cancel := context.WithTimeout(req.Context(), timeout)
		defer cancel()
		relay(w, req.WithContext(ctx), up, backendURL, func(w http.ResponseWriter, err error) {
			http.Error(w, "the request ran out of time", http.StatusGatewayTimeout)
		})
	})
}

// serve serves h on a loopback port of its own and returns its URL.
func (r *rig) serve(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	r.servers = append(r.servers, srv)
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/", nil
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
func (r *rig) settle() error {
	if len(r.kids) > 0 {
		_, err := r.kids[0].call("settle")
		return err
	}
	for end := time.Now().Add(10 * time.Second); r.running.Load() > 0 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// setHang turns the backend's hanging (and the plain edge's budget) on or
// off, in every process of the rig.
func (r *rig) setHang(on bool) error {
	r.hang.Store(on)
	cmd := "hang 0"
	if on {
		cmd = "hang 1"
	}
	for _, k := range r.kids {
		if _, err := k.call(cmd); err != nil {
			return err
		}
	}
	return nil
}

func (r *rig) close() {
	for _, s := range r.servers {
		_ = s.Close()
	}
	for _, p := range r.pools {
		p.CloseIdleConnections()
	}
	for i := len(r.kids) - 1; i >= 0; i-- {
		r.kids[i].stop()
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
	url := r.edges[0]
	if len(r.edges) > 1 {
		url = r.edges[r.turn.Add(1)%int64(len(r.edges))]
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := r.client.Do(req)
	over := time.Since(start) - timeout
	switch {
	case errors.Is(err, httpbudget.ErrUpstreamExpired):
		return over, "expired"
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		return over, "timer"
	case tooLittleLeft(err):
		return over, "refused"
	case err != nil:
		return over, r.other(err.Error())
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		return over, "ok"
	case resp.StatusCode == http.StatusGatewayTimeout && (r.pattern == "plain" || resp.Header.Get(wire.HeaderBudgetExpired) != ""):
		return over, "expired"
	}
	return over, r.other(fmt.Sprintf("status %d", resp.StatusCode))
}

// tooLittleLeft reports whether err is the budget Transport's refusal to
// send a request with too little time left: a request that waited so long
// for its turn on the machine that its budget was all but spent.
func tooLittleLeft(err error) bool {
	var be *budget.Error
	return errors.As(err, &be) && be.Outcome == budget.OutcomeInsufficient
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
	files := filesFor(n) * len(cfg.patterns)
	if cfg.procs {
		files = clientFiles(n) * len(cfg.patterns)
	}
	if cfg.profile != "" || files > load.FileLimit() {
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
		r, err := newRig(p, n, cfg.budget, cfg.procs, cfg.edges)
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
			if err := r.round(n, accs[i]); err != nil {
				return nil, fmt.Errorf("%s: %w", r.pattern, err)
			}
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
	if err := r.setHang(true); err != nil {
		return err
	}
	// One failure alone first, answered in time: the client's and the
	// edge's Transports see their hosts refuse with Budget-Expired, as a
	// running service has seen failures before a burst.
	if learn > 0 {
		r.burst(1, r.budget)
		if err := r.settle(); err != nil {
			return err
		}
	}
	for range learn {
		r.burst(n, r.budget)
		if err := r.settle(); err != nil {
			return err
		}
	}
	if err := r.setHang(false); err != nil {
		return err
	}
	if _, answers := r.burst(n, 10*time.Second); answers["ok"] != n {
		return fmt.Errorf("warm-up: %d of %d requests succeeded (%v)", answers["ok"], n, answers)
	}
	return r.setHang(true)
}

// accum adds up a pattern's measured rounds.
type accum struct {
	res    Result
	overs  []time.Duration
	cpu    time.Duration
	allocs uint64
	procs  []*procAccum
}

// procAccum adds up one process's share of a pattern's measured rounds.
type procAccum struct {
	role   string
	cpu    time.Duration
	allocs uint64
	peak   int
}

// proc returns the figures of the process of the role, added on first use.
func (a *accum) proc(role string) *procAccum {
	for _, p := range a.procs {
		if p.role == role {
			return p
		}
	}
	p := &procAccum{role: role}
	a.procs = append(a.procs, p)
	return p
}

// round measures one burst of n hanging requests into a. With the edge
// and the backend in processes of their own, each measures itself over
// the same window (from before the burst until after the last answer) and
// its figures are added to this process's.
func (r *rig) round(n int, a *accum) error {
	time.Sleep(200 * time.Millisecond) // let the previous round's stragglers go
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	dials, cdials := r.dials.Load(), r.cdials.Load()
	for _, k := range r.kids {
		if _, err := k.call("start"); err != nil {
			return err
		}
	}
	r.othersMu.Lock()
	r.others = nil // those of the warm-up and earlier rounds are not this round's
	r.othersMu.Unlock()
	stop := sampleGoroutines()
	c0 := load.CPUTime()
	over, answers := r.burst(n, r.budget)
	cpu := load.CPUTime() - c0
	peak := stop()
	runtime.ReadMemStats(&m1)
	a.add("client", cpu, m1.Mallocs-m0.Mallocs, peak)
	a.res.Dials += r.dials.Load() - dials
	a.res.ClientDials += r.cdials.Load() - cdials
	for _, k := range r.kids {
		fig, err := k.call("stop")
		if err != nil {
			return err
		}
		a.add(k.label(), time.Duration(fig.CPUNs), fig.Mallocs, fig.GoroutinesPeak)
		a.res.Dials += fig.Dials
	}
	a.overs = append(a.overs, over...)
	for k, v := range answers {
		a.res.Answers[k] += v
	}
	r.othersMu.Lock()
	for k, v := range r.others {
		a.res.Others = countOther(a.res.Others, k, v)
	}
	r.othersMu.Unlock()
	return r.settle()
}

// add adds a process's figures for one round: its CPU time and
// allocations to the pattern's, and its goroutines at peak to the round's.
func (a *accum) add(role string, cpu time.Duration, allocs uint64, peak int) {
	a.cpu += cpu
	a.allocs += allocs
	p := a.proc(role)
	p.cpu += cpu
	p.allocs += allocs
	p.peak = max(p.peak, peak)
}

// result is the accumulated rounds' Result.
func (a *accum) result() Result {
	res := a.res
	res.Failures = len(a.overs)
	res.GoroutinesPeak = 0
	for _, p := range a.procs {
		res.GoroutinesPeak += p.peak
	}
	if res.Failures == 0 {
		return res
	}
	if len(a.procs) > 1 {
		for _, p := range a.procs {
			res.PerProcess = append(res.PerProcess, ProcResult{
				Role:             p.role,
				CPUMsPerFailure:  load.Ms(p.cpu) / float64(res.Failures),
				AllocsPerFailure: float64(p.allocs) / float64(res.Failures),
				GoroutinesPeak:   p.peak,
			})
		}
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

// filesFor is the open files n concurrent requests need in one process:
// both ends of n connections at each of two hops, and some to spare.
func filesFor(n int) int { return 4*n + 500 }

// raiseFiles raises the process's RLIMIT_NOFILE to at least want, or
// says why it cannot; why says what needs them.
func raiseFiles(want uint64, why string) error {
	got, err := load.RaiseFiles(want)
	if err == nil {
		return nil
	}
	return fmt.Errorf("failload: %d open files are needed (%s), the limit is %d and raising it failed: %v; "+
		"raise the hard limit (ulimit -Hn, or run with the privilege to) or lower -n", want, why, got, err)
}

// chooseProcs decides, by the -procs flag, whether the edge and the
// backend run as processes of their own at concurrencies up to n, and
// raises the open-file limit for it: in one process, for every pattern's
// connections at once (to interleave their rounds) or failing that one
// pattern's; across processes, for the edge's (children inherit the limit).
func chooseProcs(flagValue string, n, patterns, edges int) (bool, error) {
	one := func() error {
		if raiseFiles(uint64(filesFor(n)*patterns), "4 per concurrent request") == nil {
			return nil
		}
		return raiseFiles(uint64(filesFor(n)), "4 per concurrent request, client, edge and backend in one process")
	}
	three := func() error {
		e := edgeFiles(perEdge(n, edges))
		if raiseFiles(uint64(max(clientFiles(n)*patterns, e)), "") == nil {
			return nil
		}
		where := "the edge process"
		if edges > 1 {
			where = fmt.Sprintf("each of %d edge processes", edges)
		}
		return raiseFiles(uint64(max(clientFiles(n), e)),
			fmt.Sprintf("2 per concurrent request in %s, %d for %d; 1 in the client's and the backend's", where, e, n))
	}
	switch flagValue {
	case "never":
		return false, one()
	case "always":
		return true, three()
	case "auto":
		if one() == nil {
			return false, nil
		}
		return true, three()
	}
	return false, fmt.Errorf("failload: -procs %q: want auto, always or never", flagValue)
}

// table renders the report as a Markdown table.
func (rep *Report) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "budget %v ms, GOMAXPROCS %d, %d process(es) (%d edge), load %s → %s\n\n", rep.BudgetMs, rep.GOMAXPROCS, rep.Processes, rep.Edges, rep.LoadBefore, rep.LoadAfter)
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
	for _, r := range rep.Results {
		for _, why := range slices.Sorted(maps.Keys(r.Others)) {
			fmt.Fprintf(&b, "\n%s at %d, other answer (%d): %s", r.Pattern, r.Concurrency, r.Others[why], why)
		}
	}
	return b.String()
}

func init() { log.SetOutput(os.Stderr); log.SetFlags(0) }
