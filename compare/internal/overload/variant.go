package overload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
	variantFailsafe = "failsafe-go"
	variantGoZero   = "go-zero"
	variantKratos   = "kratos-bbr"
	variantBudget   = "budget"
)

// Variants returns the names of the variants, in the order a run measures
// them.
func Variants() []string {
	return []string{variantNone, variantTimeouts, variantFailsafe, variantGoZero, variantKratos, variantBudget}
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
	Budget time.Duration `json:"budget"` // every request's budget
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
