package withoutcancel

import (
	"context"
	"time"

	"github.com/timebudget/budget"
)

func audit(ctx context.Context) error { return nil }

func unbounded(ctx context.Context) {
	go audit(context.WithoutCancel(ctx)) // want `context.WithoutCancel result is never given a deadline of its own`
}

func stored(ctx context.Context) {
	dctx := context.WithoutCancel(ctx) // want `context.WithoutCancel result is never given`
	go audit(dctx)
}

func boundedOther(ctx context.Context) {
	dctx := context.WithoutCancel(ctx) // want `context.WithoutCancel result is never given`
	c, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	go audit(dctx)
	_ = audit(c)
}

// Near misses: none of these is reported.

func direct(ctx context.Context) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	go func() {
		defer cancel()
		_ = audit(c)
	}()
}

func later(ctx context.Context) {
	dctx := context.WithoutCancel(ctx)
	c, cancel := context.WithDeadline(dctx, time.Now().Add(time.Second))
	defer cancel()
	_ = audit(c)
}

func detached(ctx context.Context) {
	c, cancel := budget.Detach(context.WithoutCancel(ctx), "audit", time.Second)
	defer cancel()
	_ = audit(c)
}

func reassigned(ctx context.Context) {
	c := context.WithoutCancel(ctx)
	c, cancel := context.WithTimeoutCause(c, time.Second, nil)
	defer cancel()
	_ = audit(c)
}

type key struct{}

func wrapped(ctx context.Context) {
	c, cancel := context.WithDeadlineCause(context.WithValue(context.WithoutCancel(ctx), key{}, 1), time.Now(), nil)
	defer cancel()
	_ = audit(c)
}

func wrappedUnbounded(ctx context.Context) {
	go audit(context.WithValue(context.WithoutCancel(ctx), key{}, 1)) // want `context.WithoutCancel result is never given`
}

type request struct{ ctx context.Context }

// From go-redis: WithoutCancel as a stand-in for Background that keeps the
// request's values; the work is bounded by connection timeouts elsewhere.
func fallback(req request) {
	rctx := context.Background()
	if req.ctx != nil {
		rctx = context.WithoutCancel(req.ctx)
	}
	_ = audit(rctx)
}

func fallbackVar(bg context.Context, req request) {
	fctx := bg
	if c := req.ctx; c != nil {
		fctx = context.WithoutCancel(c)
	}
	_ = audit(fctx)
}

// From net/http's Transport: a dial detached from the request, ended by its
// own cancel function.
func cancelled(ctx context.Context) {
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer cancel()
		_ = audit(dctx)
	}()
}
