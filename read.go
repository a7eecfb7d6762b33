package budget

import (
	"context"
	"time"
)

// Reading is a budget as one instant sees it: what [Read] returns. Transport
// adapters take one reading per request rather than asking for the remaining
// time, the reserve, the deadline, the stage and the attempt number one call
// at a time, so that every figure they send or record belongs to the same
// instant. It is a plain value and safe to copy.
type Reading struct {
	// Now is the instant of the reading, derived from the deadline and a
	// single monotonic clock read.
	Now time.Time
	// Deadline is the context's deadline: when its caller stops waiting.
	Deadline time.Time
	// Remaining is the time left before Deadline, before the reserve:
	// Deadline minus Now. It is negative once the deadline has passed.
	Remaining time.Duration
	// Reserve is the time held back by [WithReserve] and [WithFallback] for
	// the caller's own later work; zero when none is.
	Reserve time.Duration
	// Available is the time left after the reserve, Remaining less Reserve:
	// what the next piece of work may spend, as [Available] reports it.
	Available time.Duration
	// Stage names the boundary that started the budget, or is empty when the
	// context has a deadline but carries no budget of this package.
	Stage string
	// Attempt is the attempt number of a [Retry] loop or [Hedge] the context
	// belongs to ([AttemptNumber]), or 0 outside one.
	Attempt int
}

// Read returns ctx's budget as it stands now, and whether ctx has a deadline
// at all; without one the Reading is zero, as [context.Context.Deadline]
// returns a zero time. It costs one clock read and two context value lookups,
// and does not allocate: about what [Remaining] and [AttemptNumber] cost
// together.
func Read(ctx context.Context) (Reading, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return Reading{}, false
	}
	rem := time.Until(dl)
	r := Reading{Now: dl.Add(-rem), Deadline: dl, Remaining: rem, Attempt: AttemptNumber(ctx)}
	if st := stateOf(ctx); st != nil {
		r.Reserve, r.Stage = st.reserve, st.stage
	}
	r.Available = rem - r.Reserve
	return r, true
}
