package budget

import (
	"context"
	"reflect"
	"strconv"
	"time"
)

// EventKind says what an [Event] records. Each thing that happens to a
// budget is one event: a refusal is one [EventRefuse] whatever refused it,
// and a fallback rung's attempt is one [EventFallback], not an attempt and a
// fallback.
type EventKind uint8

// The kinds of event a budget records. Their String forms are the names used
// in the ledger's text and JSON and in metrics labels.
const (
	EventArrival   EventKind = iota + 1 // a budget started (at the edge or on arrival at a hop)
	EventRefuse                         // work was not started; Outcome says why (insufficient, shed, retry_suppressed, expired, canceled)
	EventAttempt                        // an attempt ran; Duration and Outcome say how long and how it ended
	EventFallback                       // a fallback rung of a ladder ran (an attempt like any other, after a better rung did not answer)
	EventBackoff                        // a retry waited before its next attempt
	EventHedge                          // a hedged second attempt started
	EventQueue                          // an item waited in a queue; Outcome is ok when it was handed out, or why it was dropped
	EventDetach                         // work was detached to run after the answer
	EventWait                           // a wait for a person, outside the machine budget
	EventSkew                           // an absolute deadline was ignored: the clocks disagree
	EventMalformed                      // a deadline header was malformed (ignored, or refused under a strict policy)
)

var eventNames = [...]string{
	EventArrival:   "arrival",
	EventRefuse:    "refuse",
	EventAttempt:   "attempt",
	EventFallback:  "fallback",
	EventBackoff:   "backoff",
	EventHedge:     "hedge",
	EventQueue:     "queue",
	EventDetach:    "detach",
	EventWait:      "wait",
	EventSkew:      "skew",
	EventMalformed: "malformed",
	EventEject:     "eject",
	EventRecover:   "recover",
}

// String returns the event kind's lower-case name, such as "attempt".
func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "event(" + strconv.Itoa(int(k)) + ")"
}

// Event is one entry of a [Ledger] and what an [Observer] receives. It is a
// plain value; receiving one costs no allocation.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Stage names the operation or step, such as an [Op] name.
	Stage string
	// At is when the event began, on the local monotonic clock.
	At time.Time
	// Offset is At relative to the start of the request's budget. The
	// [Ledger] fills it in; observers see it filled in too when a ledger is
	// present.
	Offset time.Duration
	// Duration is how long the event lasted (attempts, backoff, queue waits);
	// zero for instants.
	Duration time.Duration
	// Remaining is the time that was left before the deadline when the event
	// began, before any reserve. It is zero when there was no deadline.
	Remaining time.Duration
	// Needed is the time the work was estimated to need (refusals, and
	// attempts that were admitted on an estimate).
	Needed time.Duration
	// Outcome says how the work ended or why it did not start;
	// [OutcomeNone] for instants.
	Outcome Outcome
	// Attempt numbers attempts of one retry loop or hedge from 1; zero
	// elsewhere.
	Attempt int
	// Probe reports an attempt that its [Op] admitted as a probe: the
	// estimate alone would have refused it, and it was let through to learn
	// whether the dependency has recovered.
	Probe bool
	// Err is the error the work ended with, or the refusal, if any.
	Err error
}

// emit records ev in the budget's ledger and hands it to the observers.
// It costs one nil check per absent observer.
func emit(ctx context.Context, st *state, extra Observer, ev Event) {
	if st != nil {
		if st.ledger != nil {
			ev.Offset = ev.At.Sub(st.ledger.start)
			st.ledger.add(ev)
		}
		if st.observer != nil {
			st.observer.Observe(ctx, ev)
		}
	}
	if extra != nil && (st == nil || !sameObserver(extra, st.observer)) {
		extra.Observe(ctx, ev)
	}
}

// sameObserver reports whether a and b are the same observer, so one set on
// both an [Op] and a budget sees each event once. Observers of a type that
// cannot be compared (an [ObserverFunc], a map or slice type) are never the
// same: comparing them with == would panic.
func sameObserver(a, b Observer) bool {
	if a == nil || b == nil {
		return false
	}
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// Note records an event in the ledger of the budget carried by ctx and hands
// it to the budget's observer. Packages that spend a budget in ways this
// package does not see (a queue of the caller's own, a middleware) use it so
// the ledger still says where the time went. Offset is filled in from At; an
// unset At means now.
func Note(ctx context.Context, ev Event) {
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	emit(ctx, stateOf(ctx), nil, ev)
}
