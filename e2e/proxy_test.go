package e2e_test

import (
	"net"
	"sync"
	"testing"
	"time"
)

// delayProxy forwards TCP connections to a target and delays every chunk of
// bytes, in each direction, by a fixed transit time, as a network link of
// that latency would (bandwidth is not limited). It stands between the hops
// of the end-to-end test, so that transit is real time on the wire.
type delayProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// startProxy listens on loopback and forwards to target; it is closed when
// the test ends.
func startProxy(t *testing.T, target string, delay time.Duration) *delayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &delayProxy{ln: ln, target: target, delay: delay, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.Close)
	return p
}

func (p *delayProxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for the proxy's
// goroutines to end.
func (p *delayProxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

func (p *delayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *delayProxy) forget(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *delayProxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(in) {
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.forget(in)
			out, err := net.Dial("tcp", p.target)
			if err != nil || !p.track(out) {
				return
			}
			defer p.forget(out)
			var both sync.WaitGroup
			both.Add(2)
			go func() { defer both.Done(); p.pipe(out, in) }()
			go func() { defer both.Done(); p.pipe(in, out) }()
			both.Wait()
		}()
	}
}

type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst, each chunk delivered p.delay after it was read.
// When src ends, dst's write side is closed after the last chunk; when dst
// fails, both are closed so the other direction ends too.
func (p *delayProxy) pipe(dst, src net.Conn) {
	ch := make(chan chunk, 256)
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		defer close(ch)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{b: append([]byte(nil), buf[:n]...), due: time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	failed := false
	for c := range ch {
		if failed {
			continue
		}
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			failed = true
			_ = src.Close()
			_ = dst.Close()
		}
	}
	reader.Wait()
	if tc, ok := dst.(*net.TCPConn); ok && !failed {
		_ = tc.CloseWrite()
	}
}
