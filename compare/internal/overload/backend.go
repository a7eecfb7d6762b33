package overload

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// backendEnv carries the backend's spec to a child process; its presence
// makes the process a backend.
const backendEnv = "BUDGET_OVERLOAD_BACKEND"

// Headers the harness itself sends, to account for each request: its number
// and the class the edge gave it. They are instrumentation, the same for
// every variant, not protection.
const (
	idHeader    = "Overload-Id"
	classHeader = "Overload-Class"
	unitsHeader = "Overload-Units" // the request's work, in units
	partHeader  = "Overload-Part"  // which of the edge's calls, in the fan-out workload
)

// backendSpec is what a backend process needs to know.
type backendSpec struct {
	params
	Variant string `json:"variant"`
	Rounds  int    `json:"rounds"` // rounds of spin per unit
	Units   int    `json:"units"`  // units per request
}

// ServeBackendIfChild makes this process a backend when it was started as
// one by a run: it serves until its standard input closes, then exits. In
// any other process it returns at once. A binary that runs the harness calls
// it first thing in main (or TestMain).
func ServeBackendIfChild() {
	spec := os.Getenv(backendEnv)
	if spec == "" {
		return
	}
	if err := serveBackend(spec, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "overload backend:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// record is what the backend knows of one request.
type record struct {
	ID      int64  `json:"id"`
	Part    int    `json:"part"`    // which of the edge's calls for the request
	Class   string `json:"class"`   // the class the backend saw
	Started bool   `json:"started"` // its work began
	Units   int64  `json:"units"`   // units of work it ran
	Done    bool   `json:"done"`    // its work ran to the end
}

// backendStats is what /stats answers.
type backendStats struct {
	Records []record `json:"records"`
	CPU     float64  `json:"cpu_s"` // the process's CPU time, user and system
}

// ledger holds the backend's records.
type ledger struct {
	mu   sync.Mutex
	recs map[key]*entry
}

type key struct {
	id   int64
	part int
}

type entry struct {
	class   string
	want    int // units of work the request asked for
	started atomic.Bool
	done    atomic.Bool
	units   atomic.Int64
}

func (l *ledger) arrive(k key, class string, want int) *entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.recs == nil {
		l.recs = make(map[key]*entry)
	}
	e := l.recs[k]
	if e == nil {
		e = &entry{class: class, want: want}
		l.recs[k] = e
	}
	return e
}

func (l *ledger) snapshot() []record {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]record, 0, len(l.recs))
	for k, e := range l.recs {
		out = append(out, record{ID: k.id, Part: k.part, Class: e.class, Started: e.started.Load(), Units: e.units.Load(), Done: e.done.Load()})
	}
	return out
}

// serveBackend runs a backend: it listens on loopback, writes its address to
// out, serves until in closes, and then shuts down.
func serveBackend(specJSON string, in io.Reader, out io.Writer) error {
	var spec backendSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fmt.Errorf("reading the spec in %s: %w", backendEnv, err)
	}
	quietFrameworks()
	v, err := newVariant(spec.Variant, spec.params)
	if err != nil {
		return err
	}
	l := new(ledger)
	job := func(ctx context.Context, e *entry) error {
		e.started.Store(true)
		units := e.want
		if units <= 0 {
			units = spec.Units
		}
		if err := work(ctx, spec.Rounds, units, &e.units); err != nil {
			return err
		}
		e.done.Store(true)
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/work", v.serve("backend", v.backend(func(r *http.Request) (context.Context, *entry) {
		id, _ := strconv.ParseInt(r.Header.Get(idHeader), 10, 64)
		part, _ := strconv.Atoi(r.Header.Get(partHeader))
		want, _ := strconv.Atoi(r.Header.Get(unitsHeader))
		return r.Context(), l.arrive(key{id, part}, v.classSeen(r), want)
	}, job)))
	mux.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(backendStats{Records: l.snapshot(), CPU: processCPU()})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if _, err := fmt.Fprintln(out, ln.Addr().String()); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, in) // until the harness closes our stdin
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	v.close()
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// processCPU returns the CPU time this process has used, in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// child is a running backend process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	cg    *cgroups // the run's groups, nil when none
	group string   // the child's group in cg, "" when none
}

// backends numbers the backend processes a run starts, for their groups.
var backends atomic.Int64

// startBackend starts exe as a backend process with spec, in a CPU
// accounting group of its own when cg has groups.
func startBackend(exe string, spec backendSpec, cg *cgroups) (*child, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	group := "backend-" + strconv.FormatInt(backends.Add(1), 10)
	procs, err := cg.group(group)
	if err != nil {
		group, procs = "", ""
	}
	prog, args := backendCommand(procs, exe)
	cmd := exec.Command(prog, args...)
	cmd.Env = append(os.Environ(), backendEnv+"="+string(b), "GOMAXPROCS="+strconv.Itoa(spec.Procs))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the backend process %s: %w", exe, err)
	}
	c := &child{cmd: cmd, stdin: stdin, cg: cg, group: group}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("the backend process %s did not say where it listens (does its main call ServeBackendIfChild?): %w", exe, err)
	}
	c.addr = line[:len(line)-1]
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return c, nil
}

// stats fetches the backend's records.
func (c *child) stats(client *http.Client) (backendStats, error) {
	var s backendStats
	resp, err := client.Get("http://" + c.addr + "/stats")
	if err != nil {
		return s, fmt.Errorf("fetching the backend's records: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return s, fmt.Errorf("reading the backend's records: %w", err)
	}
	return s, nil
}

// stop closes the backend's stdin and waits for it to exit, killing it if
// it has not within five seconds.
func (c *child) stop() {
	_ = c.stdin.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	if c.group != "" {
		c.cg.remove(c.group)
	}
}
