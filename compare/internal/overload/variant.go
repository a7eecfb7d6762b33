package overload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// variant is one way of protecting the graph. Each process of a run builds
// its own (the backend's in the child), so state such as a shedder's windows
// belongs to the hop that uses it, as it would in a deployment.
type variant struct {
	name string
	// serve wraps the handler of a hop ("edge", "middle" or "backend") with
	// the hop's server-side protection.
	serve func(hop string, h http.Handler) http.Handler
	// transport wraps the transport a hop calls the next one with.
	transport func(hop string, base http.RoundTripper) http.RoundTripper
	// call makes one call from hop to the next within ctx; send does the
	// exchange and returns the answer's status.
	call func(ctx context.Context, hop string, send func(context.Context) (int, error)) (int, error)
	// gather makes the edge's n calls at once (the fan-out workload), each
	// through one, and returns the request's status: 200 when every call
	// answered 200.
	gather func(ctx context.Context, n int, one func(ctx context.Context, part string) (int, error)) (int, error)
	// classify gives a request the class the edge chose for it.
	classify func(ctx context.Context, class string) context.Context
	// classSeen is the class the backend sees on a request.
	classSeen func(r *http.Request) string
	// backend serves the backend's work: arrive records the request and
	// returns its context, job runs its work.
	backend func(arrive func(*http.Request) (context.Context, *entry), job func(context.Context, *entry) error) http.Handler
	// fail answers a request whose call to the next hop failed.
	fail func(w http.ResponseWriter, err error)
	// close stops what the variant started.
	close func()
}

// Variant names, in the order a run measures them.
const (
	variantNone     = "none"
	variantTimeouts = "timeouts"
	variantFailsafe = "failsafe-bulkhead"
	variantAdaptive = "failsafe-adaptive"
	variantPriority = "failsafe-priority"
	variantGoZero   = "go-zero"
	variantKratos   = "kratos-bbr"
	variantBudget   = "budget"
)

// Variants returns the names of the variants, in the order a run measures
// them.
func Variants() []string {
	return []string{variantNone, variantTimeouts, variantFailsafe, variantAdaptive, variantPriority, variantGoZero, variantKratos, variantBudget}
}

// setting says how a variant is configured in a run, for the output.
func setting(name string, p params) string {
	procs := p.Procs
	switch name {
	case variantNone:
		return "no protection: each hop calls the next with the request's context"
	case variantTimeouts:
		return fmt.Sprintf("careful per-call timeouts: context.WithTimeout(r.Context(), %v) around each call to the next hop (the whole budget: a hop does not know what is left)", p.Budget)
	case variantFailsafe:
		return fmt.Sprintf("failsafe-go %s on each hop's client: bulkhead of %d calls, no wait; breaker at 50%% of >=20 calls in 1 s failing (errors and 5xx), 1 s delay, 3 trials; timeout %v", failsafeVersion, failsafeBulkhead, p.Budget)
	case variantAdaptive:
		return failsafeLimiterSetting(false)
	case variantPriority:
		return failsafeLimiterSetting(true)
	case variantGoZero:
		return fmt.Sprintf("go-zero %s adaptive shedder (core/load) on every hop, as rest's SheddingHandler uses it; tuned: CPU threshold %d (go-zero's 900 scaled to the backend's %d of %d CPUs, since go-zero divides its group's CPU time by all the machine's)", goZeroVersion, goZeroThreshold(procs), procs, numCPU())
	case variantKratos:
		return fmt.Sprintf("Kratos aegis %s BBR limiter (ratelimit/bbr) on every hop, as Kratos' ratelimit middleware uses it; tuned: WithCPUQuota(%d) (the backend's CPUs, where aegis reads its group's CPU time against all the machine's), default threshold 800", aegisVersion, procs)
	case variantBudget:
		return budgetSetting(p)
	}
	return ""
}

// params are what every process of a run knows of its sizing.
type params struct {
	Procs  int           `json:"procs"`  // the backend's GOMAXPROCS
	Work   time.Duration `json:"work"`   // one request's CPU time in the backend
	Budget time.Duration `json:"budget"` // the longest a request's user waits
}

// newVariant builds the named variant for a process of a run.
func newVariant(name string, p params) (*variant, error) {
	v := &variant{
		name:      name,
		serve:     func(_ string, h http.Handler) http.Handler { return h },
		transport: func(_ string, base http.RoundTripper) http.RoundTripper { return base },
		call: func(ctx context.Context, _ string, send func(context.Context) (int, error)) (int, error) {
			return send(ctx)
		},
		gather:    plainGather,
		classify:  func(ctx context.Context, _ string) context.Context { return ctx },
		classSeen: func(r *http.Request) string { return r.Header.Get(classHeader) },
		backend:   inlineBackend,
		fail:      func(w http.ResponseWriter, err error) { http.Error(w, "the next hop failed", statusOf(err)) },
		close:     func() {},
	}
	switch name {
	case variantNone:
	case variantTimeouts:
		v.call = func(ctx context.Context, _ string, send func(context.Context) (int, error)) (int, error) {
			ctx, cancel := context.WithTimeout(ctx, p.Budget)
			defer cancel()
			return send(ctx)
		}
	case variantFailsafe:
		withFailsafe(v, p.Budget)
	case variantAdaptive:
		withFailsafeLimiter(v, false)
	case variantPriority:
		withFailsafeLimiter(v, true)
	case variantGoZero:
		withGoZero(v, p.Procs)
	case variantKratos:
		withKratos(v, p.Procs)
	case variantBudget:
		withBudget(v, p)
	default:
		return nil, fmt.Errorf("overload: unknown variant %q (known: %v)", name, Variants())
	}
	return v, nil
}

// plainGather makes n calls at once, as plain Go code does (errgroup's
// WithContext): the first call that fails, or answers anything but 200,
// answers the request and cancels the others.
func plainGather(ctx context.Context, n int, one func(context.Context, string) (int, error)) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		status int
		err    error
	}
	answers := make(chan answer, n) // buffered: no call waits for a reader
	for i := range n {
		go func() {
			status, err := one(ctx, strconv.Itoa(i))
			answers <- answer{status, err}
		}()
	}
	for range n {
		if a := <-answers; a.err != nil || a.status != http.StatusOK {
			return a.status, a.err
		}
	}
	return http.StatusOK, nil
}

// inlineBackend runs each request's work on the goroutine that serves it,
// as a plain net/http service does: under overload, requests share the CPU
// and all of them slow down.
func inlineBackend(arrive func(*http.Request) (context.Context, *entry), job func(context.Context, *entry) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, e := arrive(r)
		if err := job(ctx, e); err != nil {
			http.Error(w, "work not finished", statusOf(err))
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
}

// statusOf is the status a plain hop answers an error with.
func statusOf(err error) int {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return http.StatusGatewayTimeout
	}
	return http.StatusServiceUnavailable
}
