package budget

import (
	"context"
	"strconv"
	"time"
)

// EventKind says what an [Event] records.
type EventKind uint8

// The kinds of event a budget records. Their String forms are the names used
// in the ledger's text and JSON and in metrics labels.
const (
	EventArrival         EventKind = iota + 1 // a budget started (at the edge or on arrival at a hop)
	EventAdmit                                // an attempt was admitted
	EventRefuse                               // an attempt was refused: too little time left
	EventAttempt                              // an attempt ended (Duration and Outcome set)
	EventBackoff                              // a retry waited before its next attempt
	EventRetrySuppressed                      // a retry was not attempted (no time, or retry budget spent)
	EventHedge                                // a hedged second attempt started
	EventQueue                                // an item waited in a queue (Duration is the wait)
	EventDrop                                 // an item expired while queued and was dropped
	EventFallback                             // a fallback rung answered
	EventSkip                                 // a step or rung was skipped
	EventDetach                               // work was detached to run after the answer
	EventExpiry                               // the deadline passed while work ran
	EventShed                                 // a request was refused on arrival by an inbound policy
	EventWait                                 // a wait for a person, outside the machine budget
	EventSkew                                 // an absolute deadline was ignored: the clocks disagree
	EventMalformed                            // a deadline header was malformed (ignored, or refused under a strict policy)
)

var eventNames = [...]string{
	EventArrival:         "arrival",
	EventAdmit:           "admit",
	EventRefuse:          "refuse",
	EventAttempt:         "attempt",
	EventBackoff:         "backoff",
	EventRetrySuppressed: "retry_suppressed",
	EventHedge:           "hedge",
	EventQueue:           "queue",
	EventDrop:            "drop",
	EventFallback:        "fallback",
	EventSkip:            "skip",
	EventDetach:          "detach",
	EventExpiry:          "expiry",
	EventShed:            "shed",
	EventWait:            "wait",
	EventSkew:            "skew",
	EventMalformed:       "malformed",
}

// String returns the event kind's lower-case name, such as "attempt".
func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "event(" + strconv.Itoa(int(k)) + ")"
}

// Outcomes of an attempt, as recorded in [Event.Outcome].
const (
	OutcomeOK       = "ok"       // the work succeeded
	OutcomeError    = "error"    // the work failed for a reason other than time
	OutcomeTimeout  = "timeout"  // the work ran out of time
	OutcomeCanceled = "canceled" // the caller gave up (its context was canceled)
)

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
	// Needed is the time the work was estimated to need (admission and
	// refusal events).
	Needed time.Duration
	// Outcome is one of the Outcome constants for attempts, or a short word
	// explaining a refusal or skip.
	Outcome string
	// Attempt numbers attempts of one retry loop from 1; zero elsewhere.
	Attempt int
	// Err is the error an attempt ended with, if any.
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
	if extra != nil && (st == nil || extra != st.observer) {
		extra.Observe(ctx, ev)
	}
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
