package budget

import (
	"context"
	"time"
)

// defaultLedgerCapacity is how many events a request's [Ledger] keeps when
// [Config.LedgerCapacity] is zero.
const defaultLedgerCapacity = 64

// Config sets what a budget started with [Config.Start] carries besides its
// deadline. The zero value is ready to use: no observer and a ledger of 64
// events.
type Config struct {
	// Stage names the boundary that starts the budget, as it appears in the
	// ledger and in errors. Empty means "request".
	Stage string
	// Observer, when not nil, receives every event of this budget (arrival,
	// admission, attempts, refusals, expiry). When nil, an enclosing budget's
	// observer is kept; with none at all the cost is one nil check per event.
	Observer Observer
	// LedgerCapacity bounds the events the ledger stores; zero means 64.
	// Events past the capacity are counted, not stored, so a ledger never
	// grows without bound. A negative value disables the ledger.
	LedgerCapacity int
	// Attempt is the attempt number the caller reported for this request
	// (its retry loop's [AttemptNumber]; zero when unknown). It is recorded
	// on the arrival event, so observers can see retry storms building up.
	Attempt int
	// Criticality, when not [DefaultCriticality], is the class the budget's
	// context carries ([CriticalityFrom]), as [WithCriticality] would set
	// it but at no extra cost: server adapters set it on arrival. The zero
	// value keeps the class parent carries.
	Criticality Criticality
}

// state is what a budget stores in its context. It is immutable once stored;
// derivations copy it.
type state struct {
	stage    string
	start    time.Time     // when this budget started (monotonic clock)
	total    time.Duration // the budget granted, after clamping to the parent
	reserve  time.Duration // time held back for the caller's own work
	fallback time.Duration // the part of reserve held for a ladder's last rung (see WithFallback)
	ledger   *Ledger
	observer Observer
}

type stateKey struct{}

// budgetCtx is the context a budget returns: the deadline context it wraps,
// with the budget's state, its ledger and the ledger's first events in the
// same allocation, so starting a budget costs one allocation on top of
// context.WithDeadlineCause's. Every method but Value is the deadline
// context's own, so the context package still recognises it as a cancelable
// parent and derives children without starting goroutines.
type budgetCtx struct {
	context.Context
	st     state
	crit   Criticality // answered for criticalityKey when not the default
	ledger Ledger
	inline [ledgerInitial]Event
}

// Value returns the budget's state for this package's key, and defers to
// the wrapped context for every other key.
func (c *budgetCtx) Value(key any) any {
	if key == (stateKey{}) {
		return &c.st
	}
	if c.crit != DefaultCriticality && key == (criticalityKey{}) {
		return c.crit
	}
	return c.Context.Value(key)
}

func stateOf(ctx context.Context) *state {
	st, _ := ctx.Value(stateKey{}).(*state)
	return st
}

// Start begins a budget of d at a boundary whose latency is promised, using the
// zero [Config]. See [Config.Start].
//
// Canceling the returned context releases resources associated with it, so code
// should call cancel as soon as the operations running in it complete.
func Start(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return Config{}.Start(parent, d)
}

// StartUntil begins a budget that ends at deadline, using the zero [Config].
// See [Config.StartUntil].
//
// Canceling the returned context releases resources associated with it, so code
// should call cancel as soon as the operations running in it complete.
func StartUntil(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	return Config{}.StartUntil(parent, deadline)
}

// StartUntil is [Config.Start] for a budget given as a deadline rather than a
// duration: servers that read the deadline from a request use it, so the
// time between arrival and this call is charged to the budget. The deadline
// is clamped to parent's like any other.
//
// Canceling the returned context releases resources associated with it, so code
// should call cancel as soon as the operations running in it complete.
func (c Config) StartUntil(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	return c.start(parent, time.Now(), deadline)
}

// Start begins a budget of d measured from now. The deadline is clamped to any
// deadline parent already has: a budget is never extended. The returned
// context's Deadline method reports the budget's deadline, so code that knows
// nothing of this package (net/http, gRPC, database drivers) enforces it, and
// once it passes context.Cause reports [ErrExpired].
//
// A budget of zero or less is already spent: the context is done at once.
// When parent already carries a budget, the new one shares its ledger (one
// ledger per request) and records its start as an arrival event.
//
// Canceling the returned context releases resources associated with it, so code
// should call cancel as soon as the operations running in it complete.
func (c Config) Start(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	now := time.Now()
	return c.start(parent, now, now.Add(max(d, 0)))
}

func (c Config) start(parent context.Context, now, deadline time.Time) (context.Context, context.CancelFunc) {
	if pd, ok := parent.Deadline(); ok && pd.Before(deadline) {
		deadline = pd
	}
	outer := stateOf(parent)
	dctx, cancel := context.WithDeadlineCause(parent, deadline, ErrExpired)
	bc := &budgetCtx{Context: dctx, crit: clampCriticality(c.Criticality)}
	st := &bc.st
	if outer == nil && c.LedgerCapacity >= 0 {
		// A new request: its ledger, with room for the first events.
		st.ledger = &bc.ledger
		bc.ledger.init(now, deadline.Sub(now), c.LedgerCapacity, bc.inline[:0])
	}
	st.stage, st.start, st.total, st.observer = c.Stage, now, deadline.Sub(now), c.Observer
	if st.stage == "" {
		st.stage = "request"
	}
	if st.total < 0 {
		st.total = 0
	}
	if outer != nil {
		st.ledger = outer.ledger
		st.reserve = outer.reserve
		if st.observer == nil {
			st.observer = outer.observer
		}
	}
	emit(bc, st, nil, Event{Kind: EventArrival, Stage: st.stage, At: now, Remaining: st.total, Attempt: c.Attempt})
	return bc, cancel
}

// Remaining returns the time left before ctx's deadline, measured on the
// monotonic clock, and whether ctx has a deadline at all. It is negative once
// the deadline has passed. It costs one clock read and no allocation.
func Remaining(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(d), true
}

// Available returns the time left before ctx's deadline less the reserve held
// back with [WithReserve]: what the next piece of work may spend. The boolean
// is false when ctx has no deadline.
func Available(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	left := time.Until(d)
	if st := stateOf(ctx); st != nil {
		left -= st.reserve
	}
	return left, true
}

// Reserve returns the total time held back by [WithReserve] on ctx.
func Reserve(ctx context.Context) time.Duration {
	if st := stateOf(ctx); st != nil {
		return st.reserve
	}
	return 0
}

// WithReserve returns a context that holds back d more of the budget for the
// caller's own work: writing the response, or the final cheap fallback of a
// ladder. Attempts derived from it ([Attempt], [Op.Do]) end d before the
// deadline. Reserves accumulate; a reserve of zero or less returns parent
// unchanged. The deadline itself is not moved, so the caller keeps its full
// budget for what it reserved the time for.
func WithReserve(parent context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return parent
	}
	st := stateOf(parent)
	next := &state{stage: "request", reserve: d}
	if st != nil {
		cp := *st
		cp.reserve += d
		next = &cp
	}
	return context.WithValue(parent, stateKey{}, next)
}

// WithFallback returns a context that holds back d of the budget for a
// fallback that comes later in the request, such as the cheap last rung of a
// [Ladder]: every attempt derived from it ([Op.Do], [Attempt], a [Retry], a
// [Gather]) leaves that time alone, as with [WithReserve], and the last rung
// of the first Ladder that reaches its last rung spends it. Call it where the
// request starts, with the ladder's [Ladder.Need], so that stages before the
// ladder cannot spend the time its cache answer needs:
//
//	ctx, cancel := budget.Start(ctx, 300*time.Millisecond)
//	defer cancel()
//	ctx = budget.WithFallback(ctx, geometry.Need())
//
// A d of zero or less returns parent unchanged.
func WithFallback(parent context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return parent
	}
	next := &state{stage: "request", reserve: d, fallback: d}
	if st := stateOf(parent); st != nil {
		cp := *st
		cp.reserve += d
		cp.fallback += d
		next = &cp
	}
	return context.WithValue(parent, stateKey{}, next)
}

// withoutFallback returns ctx with the time held by [WithFallback] given back:
// the context the fallback itself runs in.
func withoutFallback(ctx context.Context, st *state) context.Context {
	if st == nil || st.fallback <= 0 {
		return ctx
	}
	cp := *st
	cp.reserve -= cp.fallback
	cp.fallback = 0
	return context.WithValue(ctx, stateKey{}, &cp)
}

// AfterWait starts a fresh machine budget of d for the work that follows a wait
// for a person (an approval, a reply) that began at waitStart. Waiting for a
// human runs on a different clock: counting it against the machine budget would
// expire every request that waits. The returned context keeps parent's values
// and ledger (the wait is recorded as an [EventWait]) but not its deadline or
// cancellation; its own deadline is now + d.
//
// Canceling the returned context releases resources associated with it, so code
// should call cancel as soon as the operations running in it complete.
func AfterWait(parent context.Context, waitStart time.Time, d time.Duration) (context.Context, context.CancelFunc) {
	now := time.Now()
	if st := stateOf(parent); st != nil {
		emit(parent, st, nil, Event{Kind: EventWait, Stage: "person", At: waitStart, Duration: now.Sub(waitStart)})
	}
	return Start(context.WithoutCancel(parent), d)
}

// LedgerFrom returns the ledger of the budget carried by ctx, or nil when ctx
// carries none. A nil *Ledger is safe to use: it records nothing.
func LedgerFrom(ctx context.Context) *Ledger {
	if st := stateOf(ctx); st != nil {
		return st.ledger
	}
	return nil
}
