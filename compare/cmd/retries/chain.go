package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The faults of the dependency at the bottom of the chain.
const (
	faultFail    = "fail"    // (a) every call fails at once
	faultHang    = "hang"    // (b) every call hangs until its caller leaves
	faultFlaky   = "flaky"   // (c) 30 % of calls fail at once
	faultPayment = "payment" // (d) a side effect, then no answer in time
)

var faults = []string{faultFail, faultHang, faultFlaky, faultPayment}

// errFault is the bottom's failure.
var errFault = errors.New("dependency failed")

// headerRequestID names the offered request a call belongs to; every hop
// forwards it, so that the bottom counts side effects per offered request.
const headerRequestID = "X-Request-Id"

// maxHang bounds a hanging call whose caller never leaves.
const maxHang = 30 * time.Second

// bottom is the dependency at the bottom of the chain: it counts the calls
// that reach its code, and for the payment fault the side effects made per
// offered request.
type bottom struct {
	fault string
	calls atomic.Int64

	mu      sync.Mutex
	rng     *rand.Rand
	effects map[string]int
}

func newBottom(fault string, seed uint64) *bottom {
	return &bottom{fault: fault, rng: rand.New(rand.NewPCG(seed, 33)), effects: make(map[string]int)}
}

// serve is one call of request id: nil for a success, or the fault's error.
func (b *bottom) serve(ctx context.Context, id string) error {
	b.calls.Add(1)
	switch b.fault {
	case faultFail:
		return errFault
	case faultFlaky:
		b.mu.Lock()
		fail := b.rng.Float64() < 0.3
		b.mu.Unlock()
		if fail {
			return errFault
		}
		return nil
	case faultPayment:
		b.mu.Lock()
		b.effects[id]++
		b.mu.Unlock()
	}
	t := time.NewTimer(maxHang)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errFault
	}
}

// duplicates is how many side effects were made beyond one per request.
func (b *bottom) duplicates() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.effects {
		n += c - 1
	}
	return n
}

// caller is one hop's way of calling the next: it returns nil when the next
// hop answered with success.
type caller func(ctx context.Context, id string) error

// chain is a running chain for one variant and fault: the client calls
// top, which calls a middle hop, which calls the bottom; each of the three
// callers retries up to 3 attempts.
type chain struct {
	top   caller
	close func()
}

// variant builds the chain of one retry strategy over b.
type variant struct {
	name  string
	build func(cfg config, b *bottom) (chain, error)
}

var variants = []variant{
	{"naive", naiveChain},
	{"failsafe-go", failsafeChain},
	{"grpc-go", grpcChain},
	{"budget", budgetChain},
}

// httpHop serves h on a loopback listener and returns its URL and a closer.
func httpHop(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// httpChain builds a chain of HTTP hops over loopback: bottomHandler
// answers at the bottom, hop turns the caller of the next hop into a hop's
// handler, and call makes the caller of a URL, retries included.
func httpChain(bottomHandler http.Handler, hop func(next caller) http.Handler, call func(url string) caller) (chain, error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	url, c, err := httpHop(bottomHandler)
	if err != nil {
		return chain{}, err
	}
	closers = append(closers, c)
	for range 2 {
		if url, c, err = httpHop(hop(call(url))); err != nil {
			closeAll()
			return chain{}, err
		}
		closers = append(closers, c)
	}
	return chain{top: call(url), close: closeAll}, nil
}

// send makes one HTTP call of request id to url through c: a POST for the
// payment fault, a GET otherwise. A status of 400 or more is an error.
func send(ctx context.Context, c *http.Client, url, id string, post bool) error {
	method := http.MethodGet
	if post {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set(headerRequestID, id)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 400 {
		return fmt.Errorf("%s answered %d", url, resp.StatusCode)
	}
	return nil
}

// bottomHTTP answers b's calls over HTTP: 200, or 503 for a failure.
func bottomHTTP(b *bottom) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := b.serve(r.Context(), r.Header.Get(headerRequestID)); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	})
}

// hopHTTP is a hop's handler that calls next and answers 503 when the
// call fails.
func hopHTTP(next caller) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := next(r.Context(), r.Header.Get(headerRequestID)); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	})
}
