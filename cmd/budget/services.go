package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"
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
		ErrorLog:          quietLog,
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

// depHTTPServer serves a dependency over HTTP: "/" does a call of the
// dependency's typical latency, and each extra path a call of its own typical
// latency on the same engine (so a fault hits every path).
type depHTTPServer struct {
	*httpServer
	dep *dependency
}

func startDependencyHTTP(d *dependency, extra map[string]time.Duration) (*depHTTPServer, error) {
	return startDependencyHTTPServer(d, extra, false)
}

func startDependencyHTTPServer(d *dependency, extra map[string]time.Duration, h2c bool) (*depHTTPServer, error) {
	mux := http.NewServeMux()
	handle := func(base time.Duration) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := d.serveWork(r.Context(), base); err != nil {
				code := http.StatusGatewayTimeout
				switch {
				case errors.Is(err, errDependencyFailed):
					code = http.StatusServiceUnavailable
				case errors.Is(err, context.DeadlineExceeded):
					// The work stopped at the deadline the caller sent: say
					// the budget is spent, so no client layer retries.
					w.Header().Set("Budget-Expired", d.name)
				}
				http.Error(w, err.Error(), code)
				return
			}
			_, _ = w.Write([]byte("ok\n"))
		})
	}
	mux.Handle("/", handle(d.base))
	for path, base := range extra {
		mux.Handle(path, handle(base))
	}
	s, err := startHTTPServer(serverHTTP(mux, d.name), h2c)
	if err != nil {
		return nil, err
	}
	return &depHTTPServer{httpServer: s, dep: d}, nil
}

func (s *depHTTPServer) close() {
	s.httpServer.close()
	s.dep.close()
}

// depGRPCServer serves a dependency over gRPC.
type depGRPCServer struct {
	srv  *grpc.Server
	addr string
	dep  *dependency
	done chan struct{}
}

func startDependencyGRPC(d *dependency) (*depGRPCServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	opts := append([]grpc.ServerOption{grpc.WaitForHandlers(true)}, serverGRPCOptions(d.name)...)
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&grpcServiceDesc, d)
	s := &depGRPCServer{srv: srv, addr: ln.Addr().String(), dep: d, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = srv.Serve(ln)
	}()
	return s, nil
}

func (s *depGRPCServer) close() {
	s.srv.Stop()
	<-s.done
	s.dep.close()
}
