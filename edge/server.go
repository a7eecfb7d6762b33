package edge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// PolicySwitch returns a switch holding p, for an adapter's WithPolicy
// option. A policy that [wire.Policy.Validate] rejects is a setup mistake:
// PolicySwitch panics, before any request, with an error naming the adapter
// ("grpcbudget: ...") that matches [budget.ErrMisconfigured] and
// [wire.ErrInvalidPolicy]. A nil p is enforcement off.
func PolicySwitch(adapter string, p *wire.Policy) *wire.Switch {
	s := new(wire.Switch)
	if err := s.Store(p); err != nil {
		panic(fmt.Errorf("%s: %w: %w", adapter, budget.ErrMisconfigured, err))
	}
	return s
}

// OrDefault returns s, or a switch holding the zero [wire.Policy] when s is
// nil: the policy of a server adapter given none.
func OrDefault(s *wire.Switch) *wire.Switch {
	if s != nil {
		return s
	}
	s = new(wire.Switch)
	_ = s.Store(&wire.Policy{})
	return s
}

// Named returns stage when it is set (an adapter's WithStage), and name, the
// call's method or procedure, otherwise.
func Named(stage, name string) string {
	if stage != "" {
		return stage
	}
	return name
}

// OpOf returns the op lookup gives name (an adapter's WithAdmission), or nil
// when there is no lookup.
func OpOf(lookup func(name string) *budget.Op, name string) *budget.Op {
	if lookup == nil {
		return nil
	}
	return lookup(name)
}

// Late returns the error of a handler that returned success after its
// budget ran out: ctx is the handler's context, and when it ended by its
// deadline the answer is late by definition, an expiry of stage (an error
// matching [context.DeadlineExceeded]) that the adapter spells as its
// protocol's code, rather than a success that tells the caller it got an
// answer in time. A call its caller canceled, or whose context has not
// ended, gives nil.
func Late(ctx context.Context, stage string) error {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil
	}
	return &budget.Error{Stage: stage, Outcome: budget.OutcomeExpired, Err: context.DeadlineExceeded}
}

// Learn teaches k how late after its deadline a handler whose context is
// ctx returned, whether its budget's timer ended it or its caller left
// first: on a starved machine the caller's cancellation can run before the
// budget's own timer, and that is the lateness most worth learning. A
// context that has not ended teaches nothing.
func (k *MarginKeeper) Learn(ctx context.Context) {
	if ctx.Err() == nil {
		return
	}
	if deadline, ok := ctx.Deadline(); ok {
		if late := time.Since(deadline); late > 0 {
			k.Observe(late)
		}
	}
}

// IsExpiry reports whether err says the caller's time is spent, wherever
// that was found out: an expiry ([context.DeadlineExceeded]) or a refusal for
// lack of time, here or upstream ([budget.ErrInsufficient], [wire.ErrShed]).
// Every adapter maps it to its protocol's deadline code (HTTP 504, gRPC
// DEADLINE_EXCEEDED).
func IsExpiry(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, budget.ErrInsufficient) ||
		errors.Is(err, wire.ErrShed)
}

// DeadlinePassed reports whether ctx's deadline, if any, has passed, or ctx
// ended for its deadline: a cancellation then was the deadline's doing, and
// adapters report it as an expiry. A nil ctx has no deadline.
func DeadlinePassed(ctx context.Context) bool {
	if ctx == nil {
		return false
	}
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// The messages an adapter's public error helper answers with
// (httpbudget.WriteError, grpcbudget.PublicError, connectbudget.PublicError):
// they say what happened, never why in the service's own words.
const (
	PublicExpired   = "the request ran out of time"
	PublicMalformed = "malformed deadline header"
	PublicInternal  = "internal server error"
)

// Run runs a handler: call with ctx, as one attempt of op ([budget.Op.Do])
// when op is not nil, so that the op measures it and may refuse it. It
// returns call's error, or op's refusal.
func Run(ctx context.Context, op *budget.Op, call func(ctx context.Context) error) error {
	if op == nil {
		return call(ctx)
	}
	return op.Do(ctx, call)
}
