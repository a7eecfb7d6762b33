package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/timebudget/budget/budgettest"
	"github.com/timebudget/budget/e2e/internal/report"
)

const (
	ms = time.Millisecond

	// The edge's budget, the transit each proxy adds in each direction, and
	// the reserve every hop keeps to write its answer.
	edgeBudget = 100 * ms
	transit    = 5 * ms
	reserve    = 1 * ms

	// The design's targets: a failed request answers within its budget
	// plus 2 ms, and work stops within 5 ms of the deadline (p99). The test
	// logs whether each was met.
	answerTarget = 2 * ms
	stopTarget   = 5 * ms

	// The bounds the test asserts. On a shared two-core machine, with three
	// processes and a race-instrumented test binary waking at the same
	// deadlines, the p99 figures above were measured between 4 and 16 ms
	// (answer) and between 1.5 and 6 ms (stop), and 33 and 16 ms with other
	// modules' tests running beside it; these bounds hold with margin there
	// and still show that the budget, not the hang, ends each
	// request: without it every request would wait for the client's 10 s.
	answerBound = 50 * ms
	stopBound   = 50 * ms
)

// TestAcrossProcesses builds cmd/edge, cmd/service and cmd/backend, starts
// each as its own process on loopback with a delaying proxy in front of the
// service and of the backend:
//
//	test client → edge ─proxy→ service ─proxy→ backend (gRPC)
//
// and checks what the processes report.
func TestAcrossProcesses(t *testing.T) {
	bin := buildPrograms(t)
	lines := newCollector()

	backend := startProgram(t, lines, filepath.Join(bin, "backend"), "-reserve", reserve.String())
	toBackend := startProxy(t, backend, transit)
	service := startProgram(t, lines, filepath.Join(bin, "service"), "-backend", toBackend.Addr(), "-reserve", reserve.String())
	toService := startProxy(t, service, transit)
	edge := startProgram(t, lines, filepath.Join(bin, "edge"), "-service", "http://"+toService.Addr(),
		"-budget", edgeBudget.String(), "-reserve", reserve.String())
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	t.Cleanup(client.CloseIdleConnections)
	url := "http://" + edge + "/work"

	t.Run("remaining shrinks at every hop", func(t *testing.T) {
		const n = 20
		for i := range n {
			if code, _ := get(t, client, url, fmt.Sprintf("work-%d", i), "work"); code != http.StatusOK {
				t.Fatalf("request %d: status %d", i, code)
			}
		}
		var shrinkES, shrinkSB, transitES, transitSB []time.Duration
		for i := range n {
			hops := lines.wait(t, fmt.Sprintf("work-%d", i), "edge", "service", "backend")
			e, s, b := hops["edge"], hops["service"], hops["backend"]
			for _, pair := range [][2]report.Line{{e, s}, {s, b}} {
				from, to := pair[0], pair[1]
				shrink := time.Duration(from.Remaining - to.Remaining)
				elapsed := time.Duration(to.Arrived - from.Arrived) // time at the hop plus transit
				onWire := time.Duration(to.Arrived - from.Sent)
				// The deadline never moves later: the next hop's time left is
				// at most the previous hop's less everything in between.
				if shrink < elapsed {
					t.Errorf("%s → %s: remaining shrank by %v, less than the %v elapsed", from.Hop, to.Hop, shrink, elapsed)
				}
				if onWire < transit {
					t.Errorf("%s → %s: %v on the wire, less than the proxy's %v", from.Hop, to.Hop, onWire, transit)
				}
			}
			shrinkES = append(shrinkES, time.Duration(e.Remaining-s.Remaining))
			shrinkSB = append(shrinkSB, time.Duration(s.Remaining-b.Remaining))
			transitES = append(transitES, time.Duration(s.Arrived-e.Sent))
			transitSB = append(transitSB, time.Duration(b.Arrived-s.Sent))
		}
		t.Logf("edge → service: remaining shrank by %v (median; min %v), of which transit %v (median)",
			q(shrinkES, 0.5), q(shrinkES, 0), q(transitES, 0.5))
		t.Logf("service → backend: remaining shrank by %v (median; min %v), of which transit %v (median)",
			q(shrinkSB, 0.5), q(shrinkSB, 0), q(transitSB, 0.5))
	})

	t.Run("a hanging backend", func(t *testing.T) {
		const n, workers = 200, 8
		over := make([]time.Duration, n) // the edge's answer time less its budget
		sent := make([]time.Time, n)
		answered := make([]time.Time, n)
		ids := make(chan int)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := range ids {
					start := time.Now()
					code, _ := get(t, client, url, fmt.Sprintf("hang-%d", i), "hang")
					end := time.Now()
					over[i] = end.Sub(start) - edgeBudget
					sent[i], answered[i] = start, end
					if code != http.StatusGatewayTimeout {
						t.Errorf("request %d: status %d, want 504", i, code)
					}
				}
			})
		}
		for i := range n {
			ids <- i
		}
		close(ids)
		wg.Wait()

		var ownDeadline, edgeDeadline, orphaned, edgeDone, toEdge, fromEdge []time.Duration
		var answeredEdge, answeredService, refused int
		reportsBy := time.Now().Add(10 * time.Second)
		for i := range n {
			id := fmt.Sprintf("hang-%d", i)
			hops, complete := lines.waitUntil(reportsBy, id, "edge", "service", "backend")
			e, s, b := hops["edge"], hops["service"], hops["backend"]
			if !complete {
				// A hop that refuses on arrival (too little time left after
				// a starved CPU delayed the request) never runs its handler,
				// so the hops behind it report nothing. Its caller must then
				// have answered 504. More than a few of these fail below.
				if last, ok := lastReport(hops, "edge", "service"); ok && last.Status == "504" {
					refused++
					continue
				}
				t.Errorf("%s: no report from every hop, and no hop refused it: %v", id, hops)
				continue
			}
			// Every hop answers the expiry: the backend DEADLINE_EXCEEDED,
			// the service and the edge 504.
			if e.Status != "504" || s.Status != "504" || b.Status != "DeadlineExceeded" {
				t.Errorf("hang-%d: edge %s, service %s, backend %s; want 504, 504, DeadlineExceeded", i, e.Status, s.Status, b.Status)
			}
			if e.Answered {
				answeredEdge++
			}
			if s.Answered {
				answeredService++
			}
			edgeDone = append(edgeDone, time.Duration(e.Done-e.Arrived)-edgeBudget)
			toEdge = append(toEdge, time.Duration(e.Arrived-sent[i].UnixNano()))
			fromEdge = append(fromEdge, time.Duration(answered[i].UnixNano()-e.Done))
			if b.GaveUp == 0 {
				t.Errorf("hang-%d: the backend's probe saw no caller give up", i)
			}
			ownDeadline = append(ownDeadline, time.Duration(b.PastDeadline))
			edgeDeadline = append(edgeDeadline, time.Duration(b.WorkStop-e.Deadline-int64(reserve)))
			orphaned = append(orphaned, time.Duration(b.Orphaned))
		}
		// Each hop's budget ends an answer margin before its caller's, so
		// the hop behind it stops first and its answer arrives while the
		// hop still listens: answered, not canceled. With one shared
		// deadline (the programs' -margin -1ns) almost none are, as every
		// answer crosses the proxy's transit after the caller's deadline:
		// 0 to 1 of 200 measured. With the adaptive margin, on this
		// two-core machine shared with other builds, 191 and 172 of 200
		// were (edge, service) at a load average of 3.5, and 148 to 181 and
		// 75 to 116 at 13 to 22; the service's margin must also cover the
		// proxy's 5 ms back:
		// answers delayed past the margin (at most 1/10 of the time left)
		// by a starved CPU make the rest. Hence a bound of a quarter, far
		// above what one shared deadline gives and clear of that noise.
		reached := n - refused
		t.Logf("refused on arrival by a hop behind the edge: %d of %d", refused, n)
		if refused > n/4 {
			t.Errorf("%d of %d requests were refused on arrival behind the edge; with a %v budget and %v of transit nearly all must reach the backend", refused, n, edgeBudget, transit)
		}
		t.Logf("calls ended by the next hop's answer, not by the caller's own deadline: edge %d of %d, service %d of %d",
			answeredEdge, reached, answeredService, reached)
		for _, c := range []struct {
			hop string
			got int
		}{{"edge", answeredEdge}, {"service", answeredService}} {
			if c.got < reached/4 {
				t.Errorf("the %s's call was answered in %d of %d requests, want at least a quarter: the rest were canceled by its own deadline", c.hop, c.got, reached)
			}
		}
		p99 := q(over, 0.99)
		t.Logf("edge answer time less its %v budget, over %d requests: p50 %v, p99 %v, max %v",
			edgeBudget, n, q(over, 0.5), p99, q(over, 1))
		t.Logf("the edge's own account, answer written less its budget: p50 %v, p99 %v, max %v",
			q(edgeDone, 0.5), q(edgeDone, 0.99), q(edgeDone, 1))
		t.Logf("outside the edge's handler: client → handler p50 %v, p99 %v; handler done → client has the answer p50 %v, p99 %v",
			q(toEdge, 0.5), q(toEdge, 0.99), q(fromEdge, 0.5), q(fromEdge, 0.99))
		t.Logf("backend work stopped after its own deadline: p50 %v, p99 %v, max %v",
			q(ownDeadline, 0.5), q(ownDeadline, 0.99), q(ownDeadline, 1))
		t.Logf("backend work stopped after the edge's deadline: p50 %v, p99 %v, max %v",
			q(edgeDeadline, 0.5), q(edgeDeadline, 0.99), q(edgeDeadline, 1))
		t.Logf("backend work went on after its caller gave up (probe): p50 %v, p99 %v, max %v",
			q(orphaned, 0.5), q(orphaned, 0.99), q(orphaned, 1))
		for _, c := range []struct {
			what          string
			p99           time.Duration
			target, bound time.Duration
		}{
			{"the edge answered past its budget", p99, answerTarget, answerBound},
			{"the backend's work stopped past its own deadline", q(ownDeadline, 0.99), stopTarget, stopBound},
			{"the backend's work stopped past the edge's deadline", q(edgeDeadline, 0.99), stopTarget, stopBound},
		} {
			met := "met"
			if c.p99 > c.target {
				met = "missed"
			}
			t.Logf("%s by %v at p99: target %v %s", c.what, c.p99, c.target, met)
			if c.p99 > c.bound {
				t.Errorf("%s by %v at p99, want within %v", c.what, c.p99, c.bound)
			}
		}
	})

	// The control: work that ignores its context goes on after the deadline,
	// and the same probe says so. Without it, the figures above could come
	// from a probe that always reads zero.
	t.Run("the probe sees work that does not stop", func(t *testing.T) {
		const n = 4
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { get(t, client, url, fmt.Sprintf("stubborn-%d", i), "stubborn") })
		}
		wg.Wait()
		var orphaned []time.Duration
		for i := range n {
			b := lines.wait(t, fmt.Sprintf("stubborn-%d", i), "backend")["backend"]
			orphaned = append(orphaned, time.Duration(b.Orphaned))
		}
		t.Logf("stubborn work went on after its caller gave up: min %v, max %v", q(orphaned, 0), q(orphaned, 1))
		if got := q(orphaned, 0); got < 150*ms {
			t.Errorf("the probe measured %v of orphaned work, want about 300ms less the budget", got)
		}
	})
}

func q(d []time.Duration, quantile float64) time.Duration { return budgettest.Quantile(d, quantile) }

// get asks the edge for one request and reads the whole answer.
func get(t *testing.T, client *http.Client, url, id, mode string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"?id="+id+"&mode="+mode, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("%s: %v", id, err)
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// buildPrograms builds the three programs into a temporary directory.
func buildPrograms(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	dir := t.TempDir()
	cmd := exec.Command(goBin, "build", "-o", dir+string(filepath.Separator), "./cmd/edge", "./cmd/service", "./cmd/backend")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// startProgram starts a program, waits for the address it listens on and
// kills it when the test ends. Its report lines go to lines; its standard
// error is logged if the test fails.
func startProgram(t *testing.T, lines *collector, path string, args ...string) string {
	t.Helper()
	cmd := exec.Command(path, args...)
	listen := make(chan string, 1)
	cmd.Stdout = &lineWriter{c: lines, listen: listen}
	var stderr bytes.Buffer
	cmd.Stderr = &syncWriter{w: &stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("%s stderr:\n%s", filepath.Base(path), stderr.String())
		}
	})
	select {
	case addr := <-listen:
		return addr
	case <-time.After(15 * time.Second):
		t.Fatalf("%s did not start", filepath.Base(path))
		return ""
	}
}

// collector gathers the report lines of every program by request id.
type collector struct {
	mu    sync.Mutex
	byID  map[string]map[string]report.Line
	added chan struct{} // closed and replaced whenever a line arrives
}

func newCollector() *collector {
	return &collector{byID: map[string]map[string]report.Line{}, added: make(chan struct{})}
}

func (c *collector) add(l report.Line) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID[l.ID] == nil {
		c.byID[l.ID] = map[string]report.Line{}
	}
	c.byID[l.ID][l.Hop] = l
	close(c.added)
	c.added = make(chan struct{})
}

// wait returns the lines of request id from the given hops, waiting up to 10
// seconds for them.
func (c *collector) wait(t *testing.T, id string, hops ...string) map[string]report.Line {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		got, added := c.byID[id], c.added
		complete := got != nil && !slices.ContainsFunc(hops, func(h string) bool { _, ok := got[h]; return !ok })
		c.mu.Unlock()
		if complete {
			return got
		}
		select {
		case <-added:
		case <-timeout:
			t.Fatalf("%s: no report from every one of %v: %v", id, hops, got)
		}
	}
}

// waitUntil returns the lines of request id from the given hops, waiting
// until the deadline for them; complete reports whether every hop reported.
func (c *collector) waitUntil(deadline time.Time, id string, hops ...string) (got map[string]report.Line, complete bool) {
	timer := time.NewTimer(max(time.Until(deadline), 0))
	defer timer.Stop()
	for {
		c.mu.Lock()
		got, added := maps.Clone(c.byID[id]), c.added
		c.mu.Unlock()
		if !slices.ContainsFunc(hops, func(h string) bool { _, ok := got[h]; return !ok }) {
			return got, true
		}
		select {
		case <-added:
		case <-timer.C:
			return got, false
		}
	}
}

// lastReport returns the line of the last of hops, in order, that reported.
func lastReport(got map[string]report.Line, hops ...string) (report.Line, bool) {
	for i := len(hops) - 1; i >= 0; i-- {
		if l, ok := got[hops[i]]; ok {
			return l, true
		}
	}
	return report.Line{}, false
}

// lineWriter parses a program's standard output into report lines.
type lineWriter struct {
	c      *collector
	listen chan string
	buf    []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		var l report.Line
		if err := json.Unmarshal(w.buf[:i], &l); err == nil {
			if l.Listen != "" {
				w.listen <- l.Listen
			} else {
				w.c.add(l)
			}
		} else {
			fmt.Fprintf(os.Stderr, "unparsed report line %q\n", w.buf[:i])
		}
		w.buf = w.buf[i+1:]
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
