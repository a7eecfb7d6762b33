package main

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
	close()
}

// httpServer serves a handler on 127.0.0.1 and, on close, waits for every
// handler it started to return.
type httpServer struct {
	srv  *http.Server
	url  string
	done chan struct{}

	// Handlers in flight. A WaitGroup will not do: an HTTP/2 connection
	// can start a handler for a stream it already read while close waits,
	// and a WaitGroup's Add must not race with its Wait.
	mu       sync.Mutex
	idle     sync.Cond
	inflight int
	closing  bool
}

// startHTTP serves h over HTTP/1.1 on a loopback port.
func startHTTP(h http.Handler) (*httpServer, error) { return startHTTPServer(h, false) }

// startHTTPServer is startHTTP; with h2c it also accepts HTTP/2 without TLS,
// as services behind a mesh or a load balancer often do.
func startHTTPServer(h http.Handler, h2c bool) (*httpServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &httpServer{url: "http://" + ln.Addr().String(), done: make(chan struct{})}
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

// close closes the listener and every connection, which cancels the contexts
// of running handlers, and waits for them to return.
func (s *httpServer) close() {
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
func (s *httpServer) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.inflight++
	return true
}

// leave counts a handler out.
func (s *httpServer) leave() {
	s.mu.Lock()
	s.inflight--
	if s.inflight == 0 {
		s.idle.Broadcast()
	}
	s.mu.Unlock()
}

// serverStack is what a run started and must stop, closed in reverse order.
type serverStack []server

// push adds srv to the things to stop.
func (s *serverStack) push(srv server) { *s = append(*s, srv) }

// closeAll closes everything pushed, last first, once.
func (s *serverStack) closeAll() {
	for _, srv := range slices.Backward(*s) {
		srv.close()
	}
	*s = nil
}

// closer adapts a function to server.
type closer func()

func (c closer) close() { c() }
