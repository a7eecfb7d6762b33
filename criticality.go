package budget

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/timebudget/budget/internal/ascii"
)

// Criticality says how much a request matters when capacity runs short: under
// a shortage, admission ([Op]), queues ([Queue]) and the server-side adapters
// refuse lower classes before a higher one misses its deadline. It travels
// beside the deadline, in the Request-Criticality header (gRPC metadata and
// AMQP headers use the same name in lower case), set at the edge by policy
// and read by every hop that trusts it, as the SRE book's chapter 21
// describes Google's own.
//
// The zero value is [DefaultCriticality], so a request that nobody
// classified is treated exactly as before criticality existed. The classes
// are ordered: a greater value is more critical. Criticality is a plain
// value, safe to copy and compare.
type Criticality int8

// The classes, from the least to the most critical.
const (
	// Sheddable is work whose loss costs little: prefetches, batch jobs,
	// retries of best-effort calls. It is refused first.
	Sheddable Criticality = -1
	// DefaultCriticality is the class of an unclassified request, the zero
	// value.
	DefaultCriticality Criticality = 0
	// Critical is work a user waits for and would see fail, such as a
	// checkout. It is refused only when it cannot finish in its own time.
	Critical Criticality = 1
)

// String returns "sheddable", "default" or "critical", the values of the
// Request-Criticality header. A value outside the three classes is reported
// as "criticality(N)". It does not allocate for the three classes.
func (c Criticality) String() string {
	switch c {
	case Sheddable:
		return "sheddable"
	case DefaultCriticality:
		return "default"
	case Critical:
		return "critical"
	}
	return "criticality(" + strconv.Itoa(int(c)) + ")"
}

// maxCriticalityLen is the longest name ParseCriticality reads: "sheddable".
const maxCriticalityLen = len("sheddable")

// ParseCriticality parses a class name, "critical", "default" or "sheddable",
// in any mix of upper and lower case, with no surrounding space. Anything
// else is an error naming the value (cut to its first 32 bytes and quoted, so
// that a hostile value cannot flood or forge a log line); the class returned
// with it is [DefaultCriticality]. It does not allocate unless it fails.
func ParseCriticality(s string) (Criticality, error) {
	if c, ok := parseCriticality(s); ok {
		return c, nil
	}
	v := s
	if len(v) > 32 {
		v = v[:32]
	}
	return DefaultCriticality, errors.New("budget: unknown criticality " + strconv.Quote(v) +
		`: want "critical", "default" or "sheddable"`)
}

// parseCriticality matches s against the three names without regard to
// ASCII case and without allocating.
func parseCriticality(s string) (Criticality, bool) {
	if len(s) == 0 || len(s) > maxCriticalityLen {
		return DefaultCriticality, false
	}
	for _, c := range [...]Criticality{Critical, DefaultCriticality, Sheddable} {
		if ascii.EqualFoldLower(s, c.String()) {
			return c, true
		}
	}
	return DefaultCriticality, false
}

type criticalityKey struct{}

// WithCriticality returns a copy of parent that carries c: the class the
// request's work is admitted, queued and sent downstream with. A class
// outside the three is clamped to the nearest one. When parent already
// carries c, parent is returned as it is, without allocating; otherwise it
// costs what [context.WithValue] costs, one allocation.
//
// A server adapter sets it on arrival from a trusted Request-Criticality
// header or from its policy; a client sets it before calling out.
func WithCriticality(parent context.Context, c Criticality) context.Context {
	c = clampCriticality(c)
	if CriticalityFrom(parent) == c {
		return parent
	}
	return context.WithValue(parent, criticalityKey{}, c)
}

// CriticalityFrom returns the class ctx carries, or [DefaultCriticality] when
// it carries none. It is one context value lookup and does not allocate.
func CriticalityFrom(ctx context.Context) Criticality {
	c, _ := ctx.Value(criticalityKey{}).(Criticality)
	return c
}

func clampCriticality(c Criticality) Criticality {
	return min(max(c, Sheddable), Critical)
}

// How an [Op] admits each class. The rules keep the classes ordered: for
// the same time available and the same state of the op, whatever admits a
// sheddable attempt admits a default one, and whatever admits a default one
// admits a critical one.

// classThreshold is the probability of finishing in time an attempt of
// class c needs when the op's threshold is t: halfway from t to 1 for
// sheddable work (0.75 for the default 0.5), t for the default class, and a
// quarter of t for critical work (0.125), which is refused only when it is
// unlikely to finish at all.
func classThreshold(t float64, c Criticality) float64 {
	switch c {
	case Sheddable:
		return t + (1-t)/2
	case Critical:
		return t / 4
	}
	return t
}

// classNeed is the time an attempt of class c needs under the Safety rule
// or the prior, given what a default one needs: twice as much for sheddable
// work, half as much for critical.
func classNeed(d time.Duration, c Criticality) time.Duration {
	switch c {
	case Sheddable:
		return 2 * d
	case Critical:
		return d / 2
	}
	return d
}

// classThrottle is K of error-rate throttling for class c, given the op's:
// halfway from it to 1 for sheddable work (1.5 for the default 2), which is
// then refused with probability max(0, (requests − K·accepts)/(requests+1))
// sooner, and twice it for critical. K is never taken below minThrottle
// (1.25):
// throttling counts its own refusals as requests, so with K at or below 1
// its refusals alone would keep it refusing after the dependency recovered
// (every probability is then a fixed point of the formula).
func classThrottle(k float64, c Criticality) float64 {
	k = max(k, minThrottle)
	switch c {
	case Sheddable:
		return max(1+(k-1)/2, minThrottle)
	case Critical:
		return 2 * k
	}
	return k
}

// classLimit is how many attempts of the op may be in flight when one of
// class c starts under a limit of l (Limit, or the limit learned from
// refusals): a sheddable attempt starts only while fewer than half of l
// are, a default one while fewer than l less a quarter of it (both rounded
// down, and at least one), a critical one while fewer than l. The top
// quarter is thus held for critical work and the top half for work that is
// not sheddable.
func classLimit(l int64, c Criticality) int64 {
	switch c {
	case Sheddable:
		return max(l/2, 1)
	case DefaultCriticality:
		return max(l-l/4, 1)
	}
	return l
}

// take takes an in-flight slot for an admitted attempt of class c under a
// limit of l, and reports false, taking none, when its class's share is
// full. With no limit (l of zero) it always takes one: the count of
// attempts in flight is what a learned limit is cut from.
func (o *Op) take(l int64, c Criticality) bool {
	n := o.adm.inflight.Add(1)
	if l > 0 && n > classLimit(l, c) {
		o.adm.inflight.Add(-1)
		return false
	}
	return true
}

// errLoadShed is the Err of an [*Error] refusing an attempt for its class
// under load, so that its text says so rather than "refused on arrival".
var errLoadShed = errors.New("shed under load for its criticality")

// shed records an attempt refused for its class under load and returns the
// error that says so: an [*Error] with [OutcomeShed], matching
// [ErrInsufficient].
func (o *Op) shed(ctx context.Context, r reading, n int, dec Admission) error {
	err := &Error{Stage: o.Name, Outcome: OutcomeShed, Remaining: r.remaining, Available: r.available, Needed: dec.Needed, Budget: r.st.budget(), Err: errLoadShed}
	emit(ctx, r.st, o.Observer, Event{Kind: EventRefuse, Stage: o.Name, At: r.now, Remaining: r.remaining,
		Needed: dec.Needed, Outcome: OutcomeShed, Attempt: n, Err: err})
	return err
}
