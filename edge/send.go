package edge

import (
	"context"
	"strconv"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

// Outbound is one client adapter's rule for the budget its calls carry. The
// zero value gives the callee all the time left, with no transit allowance,
// and refuses calls with under a millisecond left.
type Outbound struct {
	// Transit is taken off the time left before a call is sent, so that the
	// callee does not count on the time the call spends on the way. Zero or
	// negative means none.
	Transit time.Duration
	// MinUseful is the least time worth sending a call with; a call with less
	// left (after Transit) is refused locally. Under a millisecond means one
	// millisecond, the least the headers can say.
	MinUseful time.Duration
	// KeepReserve gives the callee the time left after the caller's reserve
	// (Reading.Available) rather than all the time before its
	// deadline: for a message its publisher does not wait for, the reserve
	// is the publisher's own. A request-response client leaves it false, so
	// that the callee is told the deadline the client itself waits until.
	KeepReserve bool
}

// Call is the budget one outbound call carries, as [Send] prepared it. It is
// a plain value.
type Call struct {
	// Reading is the budget when the call was prepared.
	Reading budget.Reading
	// Left is the time the callee is given, from Reading.Now: the time left
	// (after the reserve when KeepReserve is set) less Transit. It is at
	// least the minimum useful time.
	Left time.Duration
	// Deadline is Reading.Now plus Left: the deadline the callee is given.
	Deadline time.Time
}

// Send reads ctx's budget once and prepares a call named stage. It reports
// false when ctx has no deadline: the call is sent without a budget. When
// less than the minimum useful time is left it returns the refusal of
// [budget.Refuse], recorded in ctx's ledger (an error matching
// [budget.ErrInsufficient], or [context.DeadlineExceeded] once the deadline
// has passed): the call must not be sent. It does not allocate unless it
// refuses.
func Send(ctx context.Context, stage string, o Outbound) (Call, bool, error) {
	r, ok := budget.Read(ctx)
	if !ok {
		return Call{}, false, nil
	}
	left := r.Remaining
	if o.KeepReserve {
		left = r.Available
	}
	left -= max(o.Transit, 0)
	minUseful := max(o.MinUseful, time.Millisecond)
	if left < minUseful {
		return Call{}, true, budget.Refuse(ctx, stage, r.Now, left, minUseful)
	}
	return Call{Reading: r, Left: left, Deadline: r.Now.Add(left)}, true, nil
}

// AppendTimeout appends the [wire.HeaderRequestTimeout] value of the call,
// Left in whole milliseconds rounded down, to dst.
func (c Call) AppendTimeout(dst []byte) []byte {
	dst, _ = wire.AppendRequestTimeout(dst, c.Left)
	return dst
}

// AppendDeadline appends the [wire.HeaderRequestDeadline] value of the call,
// Deadline in Unix milliseconds rounded down, to dst, and reports false,
// appending nothing, when it cannot be written (a clock before 1970).
func (c Call) AppendDeadline(dst []byte) ([]byte, bool) {
	return wire.AppendRequestDeadline(dst, c.Deadline)
}

// AppendAttempt appends the [wire.HeaderRequestAttempt] value of the call to
// dst, and reports false, appending nothing, outside a retry loop or past
// attempt 999, which the header cannot carry.
func (c Call) AppendAttempt(dst []byte) ([]byte, bool) {
	if n := c.Reading.Attempt; n > 0 && n <= 999 {
		return strconv.AppendInt(dst, int64(n), 10), true
	}
	return dst, false
}
