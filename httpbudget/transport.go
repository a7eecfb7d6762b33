package httpbudget

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/timebudget/budget"
)

// Limits are the fixed caps of the phases of an HTTP exchange. Each phase is
// bounded by the smaller of its cap and the request's remaining budget, so a
// cap is a safety bound for requests without a deadline and never grants time
// the budget does not have. Zero fields take the defaults named below; the
// zero Limits is ready to use. Negative fields are a mistake that
// [Limits.Validate] reports; [NewBaseTransport] treats them as zero.
type Limits struct {
	// Dial caps establishing the TCP connection. Default 5 s.
	Dial time.Duration
	// TLSHandshake caps the TLS handshake. Default 5 s.
	TLSHandshake time.Duration
	// ResponseHeader caps the wait for the response's headers after the
	// request was written. Default 30 s.
	ResponseHeader time.Duration
	// IdleConn caps how long an idle keep-alive connection is kept. Default
	// 90 s.
	IdleConn time.Duration
}

// NewBaseTransport returns an [http.Transport] with all four kinds of timeout
// set ("set all four kinds, because one of them is not a timeout on the thing
// you think it is"): connect, TLS handshake, response header, and the total,
// which is the request's own deadline. Connecting and the TLS handshake run
// under a context whose deadline is min(cap, remaining budget); the response
// header and body are bounded by the request's context, and by the
// ResponseHeader cap for requests without a deadline. Wrap it in a
// [Transport] to send the budget upstream.
func NewBaseTransport(l Limits) *http.Transport {
	l.Dial = orDefault(l.Dial, 5*time.Second)
	l.TLSHandshake = orDefault(l.TLSHandshake, 5*time.Second)
	l.ResponseHeader = orDefault(l.ResponseHeader, 30*time.Second)
	l.IdleConn = orDefault(l.IdleConn, 90*time.Second)
	dialer := &net.Dialer{KeepAlive: 30 * time.Second}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := capped(ctx, l.Dial)
		defer cancel()
		return dialer.DialContext(ctx, network, addr)
	}
	t.TLSHandshakeTimeout = l.TLSHandshake
	t.ResponseHeaderTimeout = l.ResponseHeader
	t.IdleConnTimeout = l.IdleConn
	return t
}

// Validate reports the first negative field of l, as an error matching
// [budget.ErrMisconfigured] that names it, or nil. Call it when configuration
// loads: NewBaseTransport cannot return an error and takes a negative cap as
// zero, the default.
func (l Limits) Validate() error {
	for _, f := range [...]struct {
		name string
		v    time.Duration
	}{{"Dial", l.Dial}, {"TLSHandshake", l.TLSHandshake}, {"ResponseHeader", l.ResponseHeader}, {"IdleConn", l.IdleConn}} {
		if f.v < 0 {
			return fmt.Errorf("httpbudget: Limits.%s is negative (%v); zero means the default: %w", f.name, f.v, budget.ErrMisconfigured)
		}
	}
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// capped derives a context whose deadline is min(now+limit, ctx's deadline).
func capped(ctx context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= limit {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, limit)
}
