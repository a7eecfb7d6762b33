package httpserver

import (
	"net"
	"net/http"
	"time"
)

func listen(h http.Handler) error {
	return http.ListenAndServe(":8080", h) // want `http.ListenAndServe builds a server with no timeouts`
}

func listenTLS(h http.Handler) error {
	return http.ListenAndServeTLS(":8443", "c.pem", "k.pem", h) // want `http.ListenAndServeTLS builds a server`
}

func serve(l net.Listener, h http.Handler) error {
	return http.Serve(l, h) // want `http.Serve builds a server`
}

func literal(h http.Handler) error {
	srv := &http.Server{Addr: ":8080", Handler: h, WriteTimeout: time.Second} // want `http.Server without ReadHeaderTimeout`
	return srv.ListenAndServe()
}

func wrongField(h http.Handler) error {
	srv := &http.Server{Addr: ":8080"} // want `http.Server without ReadHeaderTimeout`
	srv.WriteTimeout = time.Second
	return srv.ListenAndServe()
}

func newServer() *http.Server {
	return new(http.Server) // want `http.Server without ReadHeaderTimeout`
}

func declared() error {
	var srv http.Server // want `http.Server without ReadHeaderTimeout`
	return srv.ListenAndServe()
}

func setBefore(h http.Handler) error {
	var srv *http.Server
	srv.ReadHeaderTimeout = time.Second
	srv = &http.Server{Handler: h} // want `http.Server without ReadHeaderTimeout`
	return srv.ListenAndServe()
}

var global = &http.Server{} // want `http.Server without ReadHeaderTimeout`

// Near misses: none of these is reported.

func withTimeout(h http.Handler) error {
	srv := &http.Server{Addr: ":8080", Handler: h, ReadHeaderTimeout: 5 * time.Second}
	return srv.ListenAndServe()
}

func readTimeout(h http.Handler) error {
	srv := http.Server{Handler: h, ReadTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}

func setLater(h http.Handler) error {
	srv := &http.Server{Handler: h}
	srv.ReadHeaderTimeout = 5 * time.Second
	return srv.ListenAndServe()
}

type app struct{ srv *http.Server }

func (a *app) start(h http.Handler) error {
	a.srv = &http.Server{Handler: h}
	a.srv.ReadHeaderTimeout = 5 * time.Second
	return a.srv.ListenAndServe()
}

func newLater() error {
	srv := new(http.Server)
	srv.ReadTimeout = time.Second
	return srv.ListenAndServe()
}

func declaredLater() error {
	var srv http.Server
	srv.ReadHeaderTimeout = time.Second
	return srv.ListenAndServe()
}

var configured = &http.Server{}

func init() { configured.ReadHeaderTimeout = time.Second }

func other() {
	type Server struct{ Addr string }
	_ = &Server{}
}
