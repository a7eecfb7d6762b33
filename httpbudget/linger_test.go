package httpbudget_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/httpbudget"
)

// connServer is a loopback server that counts the connections it accepts
// and reports each time one closes.
type connServer struct {
	*httptest.Server
	opened atomic.Int64
	close  chan struct{}
}

func newConnServer(t *testing.T, h http.Handler) *connServer {
	s := &connServer{close: make(chan struct{}, 100)}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.opened.Add(1)
		case http.StateClosed:
			s.close <- struct{}{}
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// client returns an HTTP client for s whose Transport is NewTransport over
// a pool of its own, with opts; its idle connections close with the test.
func (s *connServer) client(t *testing.T, opts ...edge.ClientOption) *http.Client {
	base := s.Client().Transport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: httpbudget.NewTransport(base, opts...)}
}

// getFails sends a GET to url under ctx through c and fails the test unless
// the error matches want.
func getFails(t *testing.T, c *http.Client, ctx context.Context, url string, want error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err == nil {
		_ = resp.Body.Close()
		t.Fatalf("got %d, want an error matching %v", resp.StatusCode, want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want one matching %v", err, want)
	}
}

// pooled returns ctx with a trace that reports on the channel each time the
// client puts a connection back in its idle pool.
func pooled(ctx context.Context) (context.Context, <-chan struct{}) {
	ch := make(chan struct{}, 100)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{PutIdleConn: func(err error) {
		if err == nil {
			ch <- struct{}{}
		}
	}}), ch
}

// gate holds a handler until the test lets it answer, so that an answer is
// late by construction, however busy the machine, rather than by a sleep
// that a slow client or a late timer can outlast.
type gate struct {
	arrived chan struct{} // a request reached the handler
	release chan struct{} // the test lets one waiting handler answer
}

func newGate() *gate {
	return &gate{arrived: make(chan struct{}, 100), release: make(chan struct{})}
}

// hold reports the request's arrival and waits until the test opens the
// gate (true), the request's connection is gone (false), or 5 s passed
// (true: a Transport that held its caller until the answer gets one).
func (g *gate) hold(r *http.Request) bool {
	g.arrived <- struct{}{}
	select {
	case <-g.release:
		return true
	case <-r.Context().Done():
		return false
	case <-time.After(5 * time.Second):
		return true
	}
}

// open waits until a request reached the handler and lets it answer.
func (g *gate) open(t *testing.T) {
	t.Helper()
	g.reached(t)
	select {
	case g.release <- struct{}{}:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler stopped waiting before the test let it answer")
	}
}

// reached waits until a request reached the handler.
func (g *gate) reached(t *testing.T) {
	t.Helper()
	wait(t, g.arrived, "request reached the server")
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10 s", what)
	}
}

// TestTransportKeepsTheConnectionOfALateAnswer: a request whose deadline
// passes before the server's answer returns to its caller at the deadline,
// and the answer, when it comes, is read in the background so that the
// connection goes back to the pool. net/http alone closes the connection of
// every request abandoned mid-flight, and the next request opens a new one:
// at 1,000 concurrent requests that was thousands of connections per burst
// of expiries.
func TestTransportKeepsTheConnectionOfALateAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		linger time.Duration
		conns  int64
	}{
		{"lingering", 2 * time.Second, 1},
		{"lingering off", -1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Each request's own flag, set when its handler answers: a
			// slow server that answers only after the client's deadline,
			// when the test opens the gate.
			var answered [4]atomic.Bool
			g := newGate()
			s := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i, _ := strconv.Atoi(r.URL.Query().Get("i"))
				if !g.hold(r) {
					return
				}
				answered[i%len(answered)].Store(true)
				w.WriteHeader(http.StatusGatewayTimeout)
			}))
			c := s.client(t, httpbudget.WithLinger(tc.linger))
			for i := range len(answered) {
				ctx, cancel := budget.Start(context.Background(), 200*time.Millisecond)
				ctx, idle := pooled(ctx)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"?i="+strconv.Itoa(i), nil)
				resp, err := c.Do(req)
				done := answered[i].Load()
				cancel()
				if err == nil {
					_ = resp.Body.Close()
					t.Fatalf("got %d, want the deadline's error", resp.StatusCode)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("err = %v, want one matching context.DeadlineExceeded", err)
				}
				if done {
					t.Fatal("the caller was held until the server answered; it should return at its deadline")
				}
				if tc.linger > 0 {
					g.open(t)
					wait(t, idle, "connection back in the client's pool after the late answer")
				} else {
					g.reached(t)
					wait(t, s.close, "connection closed")
				}
			}
			if got := s.opened.Load(); got != tc.conns {
				t.Errorf("the server accepted %d connections for 4 late answers, want %d", got, tc.conns)
			}
		})
	}
}

// TestTransportLingersAfterAnExpiry: by default (NewTransport, the zero
// Transport's configuration, WithLinger(0)) a Transport lingers toward a
// host that has shown it answers late: the first expiry toward a host
// lingers as its probe, and once its late answer came, the next expiries
// linger too and keep their connections. It lingers for DefaultLinger or the
// request's time left, whichever is less.
func TestTransportLingersAfterAnExpiry(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string][]edge.ClientOption{
		"NewTransport":  nil,
		"WithLinger(0)": {httpbudget.WithLinger(0)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newGate()
			s := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !g.hold(r) { // answers after the deadline, once the test opens the gate
					return
				}
				// With a body, the connection goes back to the pool once the
				// lingering request has read it, after it noted the answer.
				http.Error(w, "late", http.StatusGatewayTimeout)
			}))
			c := s.client(t, opts...)
			for range 3 {
				ctx, cancel := budget.Start(context.Background(), 300*time.Millisecond)
				ctx, idle := pooled(ctx)
				getFails(t, c, ctx, s.URL, context.DeadlineExceeded)
				cancel()
				g.open(t)
				wait(t, idle, "connection back in the client's pool after the late answer")
			}
			if got := s.opened.Load(); got != 1 {
				t.Errorf("the server accepted %d connections for 3 late answers, want 1", got)
			}
		})
	}
}

// TestTransportTrustsABudgetExpiredAnswer: a host that answered with a
// Budget-Expired header honours the budget, and budgets run out toward it,
// so the next expiries linger and keep their connections, the first one
// included; before the change the first expiry after such an answer closed
// its connection, as net/http does.
func TestTransportTrustsABudgetExpiredAnswer(t *testing.T) {
	t.Parallel()
	var refuse atomic.Bool
	g := newGate()
	s := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() {
			w.Header().Set("Budget-Expired", "request")
			w.WriteHeader(http.StatusGatewayTimeout)
			return
		}
		if !g.hold(r) { // answers after the deadline, once the test opens the gate
			return
		}
		w.WriteHeader(http.StatusGatewayTimeout)
	}))
	c := s.client(t)
	ctx, cancel := budget.Start(context.Background(), time.Second)
	refuse.Store(true)
	getFails(t, c, ctx, s.URL, httpbudget.ErrUpstreamExpired)
	cancel()
	refuse.Store(false)
	for range 3 {
		ctx, cancel := budget.Start(context.Background(), 300*time.Millisecond)
		ctx, idle := pooled(ctx)
		getFails(t, c, ctx, s.URL, context.DeadlineExceeded)
		cancel()
		g.open(t)
		wait(t, idle, "connection back in the client's pool after the late answer")
	}
	if got := s.opened.Load(); got != 1 {
		t.Errorf("the server accepted %d connections for a refusal and 3 late answers, want 1", got)
	}
}

// TestTransportKeepsConnectionsThroughABurst: n requests at once toward a
// budget-aware host that refused one request expire in flight together;
// their late answers are read in the background and a second burst finds
// all n connections in the pool: the Transport dials nothing after the
// warm-up. Before the change every request of the first burst, sent before
// any of them expired, closed its connection, and the second burst dialled
// n.
func TestTransportKeepsConnectionsThroughABurst(t *testing.T) {
	t.Parallel()
	const n = 8
	var mode atomic.Int32 // 0: answer after 20 ms; 1: refuse; 2: answer 504 100 ms late
	s := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch mode.Load() {
		case 0:
			time.Sleep(20 * time.Millisecond)
		case 1:
			w.Header().Set("Budget-Expired", "backend")
			w.WriteHeader(http.StatusGatewayTimeout)
		default:
			time.Sleep(200 * time.Millisecond) // 100 ms past the deadline, 150 ms before the linger ends
			w.Header().Set("Budget-Expired", "backend")
			w.WriteHeader(http.StatusGatewayTimeout)
		}
	}))
	base := s.Client().Transport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = n
	t.Cleanup(base.CloseIdleConnections)
	var dials atomic.Int64
	dial := (&net.Dialer{}).DialContext
	base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	c := &http.Client{Transport: httpbudget.NewTransport(base)}
	back := make(chan struct{}, n) // a connection went back to the pool or closed
	burst := func(d time.Duration, want error) {
		t.Helper()
		errs := make(chan error, n)
		for range n {
			go func() {
				ctx, cancel := budget.Start(context.Background(), d)
				defer cancel()
				ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{PutIdleConn: func(error) { back <- struct{}{} }})
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
				resp, err := c.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; !errors.Is(err, want) {
				t.Fatalf("err = %v, want one matching %v", err, want)
			}
		}
	}
	drained := func() {
		t.Helper()
		for range n {
			select {
			case <-back:
			case <-s.close:
			case <-time.After(10 * time.Second):
				t.Fatal("a connection neither went back to the pool nor closed within 10 s")
			}
		}
	}
	burst(10*time.Second, nil) // opens n connections
	drained()
	mode.Store(1)
	burst(10*time.Second, httpbudget.ErrUpstreamExpired) // the host shows it honours budgets
	drained()
	warm := dials.Load()
	mode.Store(2)
	burst(100*time.Millisecond, context.DeadlineExceeded)
	drained()
	burst(100*time.Millisecond, context.DeadlineExceeded)
	drained()
	if got := dials.Load() - warm; got != 0 {
		t.Errorf("the Transport dialled %d connections during two bursts of %d expiries toward a budget-aware host, want 0", got, n)
	}
}

// TestTransportAbortsACanceledRequest: a caller that is canceled, rather
// than out of time, is gone for good; the request is aborted at once, as
// net/http does, and the server's handler sees its context end.
func TestTransportAbortsACanceledRequest(t *testing.T) {
	t.Parallel()
	arrived, ended := make(chan struct{}), make(chan struct{})
	s := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
		close(ended)
	}))
	c := s.client(t, httpbudget.WithLinger(time.Hour))
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	go func() { <-arrived; cancel() }()
	getFails(t, c, ctx, s.URL, context.Canceled)
	wait(t, ended, "end of the server handler's context (the linger is an hour)")
}

// TestTransportReadsTheBodyUnderTheDeadline: once the headers have come,
// the body is read under the caller's deadline, not the linger.
func TestTransportReadsTheBodyUnderTheDeadline(t *testing.T) {
	t.Parallel()
	s := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "part")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // and the rest never comes
	}))
	c := s.client(t, httpbudget.WithLinger(time.Hour))
	ctx, cancel := budget.Start(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); got <- err }()
	select {
	case err := <-got:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("reading the body: %v, want an error matching context.DeadlineExceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the body's read outlived the caller's deadline (the linger is an hour)")
	}
}

// TestTransportStopsLingeringForAHangingServer: a server that never answers
// holds the connection for the linger only; then the request is aborted
// and the server's handler sees its context end.
func TestTransportStopsLingeringForAHangingServer(t *testing.T) {
	t.Parallel()
	ended := make(chan struct{})
	s := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		close(ended)
	}))
	c := s.client(t, httpbudget.WithLinger(50*time.Millisecond))
	ctx, cancel := budget.Start(context.Background(), 200*time.Millisecond) // time to reach the server on a busy machine
	defer cancel()
	getFails(t, c, ctx, s.URL, context.DeadlineExceeded)
	wait(t, ended, "end of the server handler's context after the linger")
	wait(t, s.close, "connection closed after the linger")
}

// TestTransportKeepsASwitchedConnectionWritable: the body of a 101
// Switching Protocols answer is the connection, which WebSocket clients use
// as an io.ReadWriteCloser; lingering keeps it one.
func TestTransportKeepsASwitchedConnectionWritable(t *testing.T) {
	t.Parallel()
	s := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = brw.Flush()
		line, _ := brw.ReadString('\n')
		_, _ = brw.WriteString(line)
		_ = brw.Flush()
	}))
	c := s.client(t, httpbudget.WithLinger(time.Second))
	ctx, cancel := budget.Start(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		t.Fatalf("the body of a 101 answer is a %T, not an io.ReadWriteCloser", resp.Body)
	}
	if _, err := io.WriteString(rwc, "ping\n"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(rwc, got); err != nil || string(got) != "ping\n" {
		t.Fatalf("read %q, %v; want the echo", got, err)
	}
}

// TestTransportKeepsTheConnectionOfARefusalReadLate: a refusal whose headers
// come in time but whose body comes after the caller's deadline is read in
// the background, and its connection goes back to the pool. Before the
// change the Transport discarded the body in the caller's RoundTrip, which
// the deadline aborted, closing the connection.
func TestTransportKeepsTheConnectionOfARefusalReadLate(t *testing.T) {
	t.Parallel()
	s := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Budget-Expired", "backend")
		w.WriteHeader(http.StatusGatewayTimeout)
		if r.Header.Get("X-Late-Body") != "" {
			w.(http.Flusher).Flush()
			time.Sleep(150 * time.Millisecond) // 50 ms past the 100 ms deadline, 200 ms before the linger ends
		}
		_, _ = io.WriteString(w, "budget: backend ran out of time\n")
	}))
	c := s.client(t)
	ctx, cancel := budget.Start(context.Background(), time.Second)
	getFails(t, c, ctx, s.URL, httpbudget.ErrUpstreamExpired) // the host honours budgets
	cancel()
	for range 2 {
		ctx, cancel := budget.Start(context.Background(), 100*time.Millisecond)
		ctx, idle := pooled(ctx)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
		req.Header.Set("X-Late-Body", "1")
		resp, err := c.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			t.Fatalf("got %d, want an error", resp.StatusCode)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want one matching context.DeadlineExceeded", err)
		}
		cancel()
		wait(t, idle, "connection back in the client's pool after the refusal's late body")
	}
	if got := s.opened.Load(); got != 1 {
		t.Errorf("the server accepted %d connections for 3 refusals, want 1", got)
	}
}

// TestTransportDoesNotSendARequestThatWaitedPastItsDeadline: a lingering
// request whose caller's deadline passes while it still waits for a
// connection has no connection to keep; sent later, it would carry a timeout
// stamped before the wait, and the server would work for a caller that has
// left. It is aborted at the deadline and never reaches the server. Before,
// it lingered, took the connection when one came back to the pool and was
// sent: at 1,000 concurrent failures, the stale timeouts let an edge's
// answers fall after its callers' linger, which closed their connections.
func TestTransportDoesNotSendARequestThatWaitedPastItsDeadline(t *testing.T) {
	t.Parallel()
	var arrived atomic.Int64
	first, release := make(chan struct{}), make(chan struct{})
	s := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == 1 {
			close(first)
			<-release // holds the only connection
		}
	}))
	base := s.Client().Transport.(*http.Transport).Clone()
	base.MaxConnsPerHost = 1
	t.Cleanup(base.CloseIdleConnections)
	c := &http.Client{Transport: httpbudget.NewTransport(base, httpbudget.WithLinger(10*time.Second))}
	get := func(d time.Duration) error {
		ctx, cancel := budget.Start(context.Background(), d)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
		resp, err := c.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		return err
	}
	held := make(chan error, 1)
	go func() { held <- get(10 * time.Second) }()
	wait(t, first, "first request at the server")
	if err := get(50 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v for a request that waited for a connection past its deadline, want one matching context.DeadlineExceeded", err)
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatalf("the request holding the connection failed: %v", err)
	}
	// A waiter still queued for the connection gets it before this request.
	if err := get(10 * time.Second); err != nil {
		t.Fatalf("a request after the connection came back failed: %v", err)
	}
	if got := arrived.Load(); got != 2 {
		t.Errorf("the server saw %d requests, want 2: the one that waited past its deadline was sent after all", got)
	}
	if got := s.opened.Load(); got != 1 {
		t.Errorf("the server accepted %d connections, want 1", got)
	}
}
