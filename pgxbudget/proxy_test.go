package pgxbudget_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// delayProxy listens on 127.0.0.1 and forwards every connection to the
// server at target, holding each chunk of the server's answers back for
// delay: a slow network toward the client, on loopback. It stops, with every
// connection it forwards, at the end of the test.
type delayProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

// newDelayProxy starts a proxy to target (host:port) and returns it.
func newDelayProxy(t testing.TB, target string, delay time.Duration) *delayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &delayProxy{ln: ln, target: target, delay: delay}
	p.wg.Go(p.serve)
	t.Cleanup(p.close)
	return p
}

// Addr returns the proxy's host and port.
func (p *delayProxy) Addr() (string, uint16) {
	a := p.ln.Addr().(*net.TCPAddr)
	return a.IP.String(), uint16(a.Port)
}

func (p *delayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

func (p *delayProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client) || !p.track(server) {
			_ = client.Close()
			_ = server.Close()
			continue
		}
		p.wg.Go(func() {
			_, _ = io.Copy(server, client)
			_ = server.Close()
		})
		p.wg.Go(func() { p.delayed(client, server) })
	}
}

// delayed copies from server to client, each chunk delay after it was read,
// in order.
func (p *delayProxy) delayed(client, server net.Conn) {
	type chunk struct {
		at time.Time
		b  []byte
	}
	ch := make(chan chunk, 1024)
	p.wg.Go(func() {
		defer func() { _ = client.Close() }()
		for c := range ch {
			time.Sleep(time.Until(c.at))
			if _, err := client.Write(c.b); err != nil {
				for range ch {
				}
				return
			}
		}
	})
	defer close(ch)
	for {
		buf := make([]byte, 32<<10)
		n, err := server.Read(buf)
		if n > 0 {
			ch <- chunk{at: time.Now().Add(p.delay), b: buf[:n]}
		}
		if err != nil {
			return
		}
	}
}

func (p *delayProxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	p.wg.Wait()
}
