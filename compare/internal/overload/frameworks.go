package overload

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"time"

	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/timeout"
	"github.com/go-kratos/aegis/ratelimit"
	"github.com/go-kratos/aegis/ratelimit/bbr"
	"github.com/zeromicro/go-zero/core/load"
	"github.com/zeromicro/go-zero/core/logx"
)

// Versions of the frameworks compared, as compare/go.mod requires them.
const (
	failsafeVersion = "v0.9.8"
	goZeroVersion   = "v1.10.3"
	aegisVersion    = "v0.2.0"
)

// failsafeBulkhead is the size of failsafe-go's bulkhead, the size its
// documentation's example uses.
const failsafeBulkhead = 10

func numCPU() int { return runtime.NumCPU() }

// goZeroThreshold scales go-zero's default CPU threshold (900 of 1000) to
// the share of the machine the backend may use: go-zero divides the CPU time
// of its process's cgroup by the time of all the machine's CPUs (times the
// CPUs its CPU set allows, all of them here), so a backend allowed one CPU
// of two is saturated at 500.
func goZeroThreshold(procs int) int64 {
	return int64(900 * min(procs, numCPU()) / numCPU())
}

// quietFrameworks turns off go-zero's logging, which would otherwise print
// every shed request and a statistics line a minute to standard output.
func quietFrameworks() {
	logx.Disable()
}

// withFailsafe puts failsafe-go's bulkhead, circuit breaker and timeout on
// every hop's client; the timeout is the whole budget, which is what a hop
// that does not know the time left can choose. The bulkhead is outermost, so that a call it refuses
// does not count as a failure of the next hop; the breaker counts errors
// and 5xx answers, including timeouts.
func withFailsafe(v *variant, callTimeout time.Duration) {
	v.transport = func(_ string, base http.RoundTripper) http.RoundTripper {
		bh := bulkhead.New[*http.Response](failsafeBulkhead)
		cb := circuitbreaker.NewBuilder[*http.Response]().
			HandleIf(func(r *http.Response, err error) bool { return err != nil || r != nil && r.StatusCode >= 500 }).
			WithFailureRateThreshold(0.5, 20, time.Second).
			WithDelay(time.Second).
			WithSuccessThreshold(3).
			Build()
		to := timeout.New[*http.Response](callTimeout)
		return failsafehttp.NewRoundTripper(base, bh, cb, to)
	}
	v.call = func(ctx context.Context, _ string, send func(context.Context) (int, error)) (int, error) {
		status, err := send(ctx)
		if errors.Is(err, bulkhead.ErrFull) || errors.Is(err, circuitbreaker.ErrOpen) {
			return http.StatusServiceUnavailable, nil
		}
		return status, err
	}
}

// withGoZero puts go-zero's adaptive shedder on every hop, as go-zero's
// rest server does (rest/handler.SheddingHandler): a refused request is
// answered 503; an answered one passes unless it is a 503.
func withGoZero(v *variant, procs int) {
	v.serve = func(_ string, h http.Handler) http.Handler {
		shedder := load.NewAdaptiveShedder(load.WithCpuThreshold(goZeroThreshold(procs)))
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			promise, err := shedder.Allow()
			if err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
			defer func() {
				if sw.code == http.StatusServiceUnavailable {
					promise.Fail()
				} else {
					promise.Pass()
				}
			}()
			h.ServeHTTP(sw, r)
		})
	}
}

// withKratos puts Kratos' BBR limiter on every hop, as Kratos' ratelimit
// server middleware does: a refused request is answered 429.
func withKratos(v *variant, procs int) {
	v.serve = func(_ string, h http.Handler) http.Handler {
		limiter := bbr.NewLimiter(bbr.WithCPUQuota(float64(procs)))
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			done, err := limiter.Allow()
			if err != nil {
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			defer done(ratelimit.DoneInfo{})
			h.ServeHTTP(w, r)
		})
	}
}

// statusWriter remembers the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}
