package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/timebudget/budget/e2e/internal/load"
)

// With -procs, the edge and the backend of a rig are processes of their
// own: this binary again, its role in the environment variable roleEnv and
// its settings in the others below. A child serves on a loopback port,
// writes {"addr": URL} on its stdout when it is ready, then answers, one
// JSON line each, the commands the parent writes on its stdin, one a line:
//
//	hang 0|1  the backend hangs (and the plain edge's timeout is the budget), or not
//	start     begin measuring: CPU (getrusage), Mallocs, the edge's dials, goroutines at peak
//	stop      end measuring and answer the figures since start
//	settle    wait, up to 10 s, until the backend's handlers have returned
//
// It exits when its stdin ends, and on Linux when the parent dies
// (Pdeathsig), so that no child outlives the run.
const (
	roleEnv    = "FAILLOAD_ROLE"    // edge or backend
	patternEnv = "FAILLOAD_PATTERN" // budget or plain
	nEnv       = "FAILLOAD_N"       // concurrent requests
	budgetEnv  = "FAILLOAD_BUDGET"  // the budget, as time.Duration
	backendEnv = "FAILLOAD_BACKEND" // the edge's backend URL
)

// clientFiles is the open files the client process needs per pattern for
// n concurrent requests: its ends of n connections to the edge, and some to
// spare (its children's pipes among them).
func clientFiles(n int) int { return n + 200 }

// edgeFiles is the open files the edge process needs for n concurrent
// requests: n connections from the client and n to the backend, and the
// few the process has besides (standard streams, listener, poller).
func edgeFiles(n int) int { return 2*n + 32 }

// backendFiles is the open files the backend process needs for n
// concurrent requests.
func backendFiles(n int) int { return n + 32 }

// childMsg is a child's answer: its address when ready, its figures on
// stop, an error when a command failed.
type childMsg struct {
	Addr           string `json:"addr,omitempty"`
	CPUNs          int64  `json:"cpu_ns,omitempty"`
	Mallocs        uint64 `json:"mallocs,omitempty"`
	Dials          int64  `json:"dials,omitempty"`
	GoroutinesPeak int    `json:"goroutines_peak,omitempty"`
	Err            string `json:"error,omitempty"`
}

// child is a running edge or backend process.
type child struct {
	role   string
	name   string // in the report, when not the role: one of several edges
	url    string
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *tailBuffer
	done   chan struct{} // closed when the process has been waited for
	err    error         // Wait's, once done
}

// label names the process in the report.
func (c *child) label() string {
	if c.name != "" {
		return c.name
	}
	return c.role
}

// perEdge is how many of n concurrent requests each of edges edge
// processes serves at most.
func perEdge(n, edges int) int {
	edges = max(edges, 1)
	return (n + edges - 1) / edges
}

// started lists the children's process ids, for the tests to check that
// none is left running.
var started struct {
	sync.Mutex
	pids []int
}

// startChild starts the process of the role (edge or backend) of the
// pattern's rig for n concurrent requests and waits until it serves.
func startChild(role, pattern string, n int, total time.Duration, backendURL string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	c := &child{role: role, stderr: &tailBuffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(exe)
	c.cmd.Env = append(os.Environ(), roleEnv+"="+role, patternEnv+"="+pattern, nEnv+"="+strconv.Itoa(n),
		budgetEnv+"="+total.String(), backendEnv+"="+backendURL)
	c.cmd.Stderr = c.stderr
	c.cmd.SysProcAttr = childAttr()
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		return nil, c.failed(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, c.failed(err)
	}
	c.out = bufio.NewScanner(stdout)
	if err := c.cmd.Start(); err != nil {
		return nil, c.failed(err)
	}
	started.Lock()
	started.pids = append(started.pids, c.cmd.Process.Pid)
	started.Unlock()
	go func() {
		defer close(c.done)
		// Wait closes stdout once the process has exited; the reader then
		// sees its end.
		c.err = c.cmd.Wait()
	}()
	msg, err := c.read()
	if err == nil && msg.Addr == "" {
		err = errors.New("it wrote no address")
	}
	if err != nil {
		c.stop()
		return nil, c.failed(err)
	}
	c.url = msg.Addr
	return c, nil
}

// failed is the error of a child that did not start, naming its role and
// saying what it wrote on its stderr.
func (c *child) failed(err error) error {
	if s := strings.TrimSpace(c.stderr.String()); s != "" {
		return fmt.Errorf("the %s process did not start: %v: %s", c.role, err, s)
	}
	return fmt.Errorf("the %s process did not start: %v", c.role, err)
}

// read reads the child's next answer.
func (c *child) read() (childMsg, error) {
	var msg childMsg
	if !c.out.Scan() {
		err := c.out.Err()
		if err == nil {
			<-c.done
			err = fmt.Errorf("it exited (%v)", c.err)
		}
		return msg, err
	}
	if err := json.Unmarshal(c.out.Bytes(), &msg); err != nil {
		return msg, fmt.Errorf("it answered %q: %w", c.out.Text(), err)
	}
	if msg.Err != "" {
		return msg, errors.New(msg.Err)
	}
	return msg, nil
}

// call sends the child a command and returns its answer.
func (c *child) call(cmd string) (childMsg, error) {
	if _, err := io.WriteString(c.in, cmd+"\n"); err != nil {
		return childMsg{}, fmt.Errorf("the %s process: %s: %w (stderr: %s)", c.role, cmd, err, strings.TrimSpace(c.stderr.String()))
	}
	msg, err := c.read()
	if err != nil {
		return msg, fmt.Errorf("the %s process: %s: %w (stderr: %s)", c.role, cmd, err, strings.TrimSpace(c.stderr.String()))
	}
	return msg, nil
}

// stop ends the child: it closes its stdin, on which it exits, and kills
// it if it has not exited within 5 s.
func (c *child) stop() {
	_ = c.in.Close()
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// tailBuffer keeps the first 4 KiB written to it, safe for concurrent use.
type tailBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := 4096 - t.b.Len(); room > 0 {
		t.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// serveRole runs this process as the child of the role, as its parent set
// it up in the environment, and returns the exit code.
func serveRole(role string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "failload %s: %v\n", role, err)
		return 1
	}
	n, err := strconv.Atoi(os.Getenv(nEnv))
	if err != nil || n < 1 {
		return fail(fmt.Errorf("%s=%q is not a positive number of requests", nEnv, os.Getenv(nEnv)))
	}
	total, err := time.ParseDuration(os.Getenv(budgetEnv))
	if err != nil {
		return fail(fmt.Errorf("%s: %w", budgetEnv, err))
	}
	pattern := os.Getenv(patternEnv)
	if pattern != "budget" && pattern != "plain" {
		return fail(fmt.Errorf("unknown pattern %q (want budget or plain)", pattern))
	}
	r := &rig{pattern: pattern, budget: total, warmN: int64(n), warmed: make(chan struct{})}
	var files int
	var h func() http.Handler
	switch role {
	case "backend":
		files, h = backendFiles(n), r.backendHandler
	case "edge":
		files, h = edgeFiles(n), func() http.Handler { return r.edgeHandler(n, os.Getenv(backendEnv)) }
	default:
		return fail(errors.New("unknown role (want edge or backend)"))
	}
	if err := raiseFiles(uint64(files), fmt.Sprintf("in the %s process, for %d concurrent requests", role, n)); err != nil {
		return fail(err)
	}
	url, err := r.serve(h())
	defer r.close()
	if err != nil {
		return fail(err)
	}
	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(childMsg{Addr: url}); err != nil {
		return fail(err)
	}
	var (
		m0     runtime.MemStats
		c0     time.Duration
		dials0 int64
		peak   func() int
	)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var msg childMsg
		switch cmd := in.Text(); cmd {
		case "hang 0", "hang 1":
			r.hang.Store(cmd == "hang 1")
		case "start":
			runtime.GC()
			runtime.ReadMemStats(&m0)
			dials0 = r.dials.Load()
			peak = sampleGoroutines()
			c0 = load.CPUTime()
		case "stop":
			if peak == nil {
				msg.Err = "stop before start"
				break
			}
			msg.CPUNs = int64(load.CPUTime() - c0)
			msg.GoroutinesPeak = peak()
			peak = nil
			var m1 runtime.MemStats
			runtime.ReadMemStats(&m1)
			msg.Mallocs = m1.Mallocs - m0.Mallocs
			msg.Dials = r.dials.Load() - dials0
		case "settle":
			_ = r.settle()
		default:
			msg.Err = fmt.Sprintf("unknown command %q", cmd)
		}
		if err := out.Encode(msg); err != nil {
			return fail(err)
		}
	}
	if peak != nil {
		peak()
	}
	return 0
}
