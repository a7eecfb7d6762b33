package budget

import (
	"context"
	"errors"
	"strconv"
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
		if equalFoldASCII(s, c.String()) {
			return c, true
		}
	}
	return DefaultCriticality, false
}

// equalFoldASCII reports whether s equals lower, a lower-case ASCII word,
// ignoring the case of ASCII letters only: no Unicode folding (the Kelvin
// sign is not a k).
func equalFoldASCII(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != lower[i] {
			return false
		}
	}
	return true
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
