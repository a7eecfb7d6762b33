package budget

import (
	"context"
	"math"
	"time"
)

// noDeadline stands for the time available when a context has no deadline.
const noDeadline = time.Duration(math.MaxInt64)

// A reading is a budget read at one instant: the time, what is left before
// the deadline, and what the next piece of work may spend after the reserve.
// Every policy of the package takes one before it decides anything.
type reading struct {
	st          *state
	now         time.Time
	remaining   time.Duration // before the deadline, before any reserve; zero without a deadline
	available   time.Duration // remaining less the reserve; noDeadline without a deadline
	hasDeadline bool
}

// read reads ctx's budget with a single clock reading: a monotonic one when
// ctx has a deadline (about half the cost of time.Now on some virtual
// machines), from which now is derived.
func read(ctx context.Context) reading {
	r := reading{st: stateOf(ctx), available: noDeadline}
	dl, ok := ctx.Deadline()
	if !ok {
		r.now = time.Now()
		return r
	}
	rem := time.Until(dl)
	r.now, r.remaining, r.available, r.hasDeadline = dl.Add(-rem), rem, rem-r.st.reserveOrZero(), true
	return r
}

// clock returns the time now and, when ctx has a deadline, the time left
// before it, with a single clock reading. It is read without the reserve
// lookup, for the admission hot path.
func clock(ctx context.Context) (now time.Time, remaining time.Duration, ok bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return time.Now(), 0, false
	}
	remaining = time.Until(dl)
	return dl.Add(-remaining), remaining, true
}

func (st *state) reserveOrZero() time.Duration {
	if st == nil {
		return 0
	}
	return st.reserve
}

func (st *state) budget() time.Duration {
	if st == nil {
		return 0
	}
	return st.total
}
