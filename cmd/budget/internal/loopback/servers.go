package loopback

import (
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// server is something the demo started on loopback and must stop.
type server interface {
	Close()
}

// HTTPServer serves a handler on 127.0.0.1 and, on close, waits for every
// handler it started to return.
type HTTPServer struct {
	// srv serves on loopback at URL (http://127.0.0.1:port); done closes
	// when Serve has returned.
	srv  *http.Server
	URL  string
	done chan struct{}

	// Handlers in flight. A WaitGroup will not do: an HTTP/2 connection
	// can start a handler for a stream it already read while close waits,
	// and a WaitGroup's Add must not race with its Wait.
	mu       sync.Mutex
	idle     sync.Cond
	inflight int
	closing  bool
}

// StartHTTP serves h over HTTP/1.1 on a loopback port.
func StartHTTP(h http.Handler) (*HTTPServer, error) { return StartHTTPServer(h, false) }

// StartHTTPServer is startHTTP; with h2c it also accepts HTTP/2 without TLS,
// as services behind a mesh or a load balancer often do.
func StartHTTPServer(h http.Handler, h2c bool) (*HTTPServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &HTTPServer{URL: "http://" + ln.Addr().String(), done: make(chan struct{})}
	s.idle.L = &s.mu
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !s.enter() {
				http.Error(w, "shutting down", http.StatusServiceUnavailable)
				return
			}
			defer s.leave()
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0), // the demo cancels requests on purpose; the server would log each one
	}
	if h2c {
		s.srv.Protocols = new(http.Protocols)
		s.srv.Protocols.SetHTTP1(true)
		s.srv.Protocols.SetUnencryptedHTTP2(true)
		s.srv.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 4096}
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Close closes the listener and every connection, which cancels the contexts
// of running handlers, and waits for them to return.
func (s *HTTPServer) Close() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	_ = s.srv.Close()
	<-s.done
	s.mu.Lock()
	for s.inflight > 0 {
		s.idle.Wait()
	}
	s.mu.Unlock()
}

// enter counts a handler in, unless the server is closing.
func (s *HTTPServer) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.inflight++
	return true
}

// leave counts a handler out.
func (s *HTTPServer) leave() {
	s.mu.Lock()
	s.inflight--
	if s.inflight == 0 {
		s.idle.Broadcast()
	}
	s.mu.Unlock()
}

// ServerStack is what a run started and must stop, closed in reverse order.
type ServerStack []server

// Push adds srv to the things to stop.
func (s *ServerStack) Push(srv server) { *s = append(*s, srv) }

// CloseAll closes everything pushed, last first, once.
func (s *ServerStack) CloseAll() {
	for _, srv := range slices.Backward(*s) {
		srv.Close()
	}
	*s = nil
}

// Closer adapts a function to server.
type Closer func()

// Close calls c.
func (c Closer) Close() { c() }
