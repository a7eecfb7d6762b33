package wire

import (
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/internal/ascii"
)

// HeaderRequestCriticality carries how much a request matters when capacity runs
// short, beside its deadline: "critical", "default" or "sheddable", compared without
// regard to ASCII case. gRPC metadata and AMQP headers use the same name in lower case,
// "request-criticality". It is read under the same trust rule as the deadline
// headers ([SourceRequestCriticality]); the budget package's Criticality type holds the
// class in a process.
const HeaderRequestCriticality = "Request-Criticality"

// The classes [HeaderRequestCriticality] carries: the budget package's classes under
// the names this package gave them before it used that type. New code writes
// budget.Sheddable, budget.DefaultCriticality and budget.Critical.
const (
	// CriticalitySheddable is "sheddable", [budget.Sheddable]: refused first under a
	// shortage.
	CriticalitySheddable = budget.Sheddable
	// CriticalityDefault is "default", [budget.DefaultCriticality]: the class of an
	// unclassified request.
	CriticalityDefault = budget.DefaultCriticality
	// CriticalityCritical is "critical", [budget.Critical]: refused only when it cannot
	// finish.
	CriticalityCritical = budget.Critical
)

// criticalityNames spells the classes, indexed by class+1.
var criticalityNames = [...]string{"sheddable", "default", "critical"}

// criticalityField describes [HeaderRequestCriticality] for errors and lookups. It is not
// in the fields table, which lists deadline sources only.
var criticalityField = field{
	src:       SourceRequestCriticality,
	name:      HeaderRequestCriticality,
	lower:     "request-criticality",
	canonical: "Request-Criticality",
}

// AppendRequestCriticality appends the [HeaderRequestCriticality] value of class c
// ("sheddable", "default" or "critical", in lower case) to dst and returns the extended
// slice. It reports false, appending nothing, when c is not one of the three classes. The
// adapters send the header only for a class other than the default, since a receiver
// that finds no header applies its policy's class, the default unless configured. It does
// not allocate when dst has room for 9 bytes.
func AppendRequestCriticality(dst []byte, c budget.Criticality) ([]byte, bool) {
	if c < CriticalitySheddable || c > CriticalityCritical {
		return dst, false
	}
	return append(dst, criticalityNames[c+1]...), true
}

// FormatRequestCriticality is like [AppendRequestCriticality] but returns a string. It does
// not allocate: the three values are constants.
func FormatRequestCriticality(c budget.Criticality) (string, bool) {
	if c < CriticalitySheddable || c > CriticalityCritical {
		return "", false
	}
	return criticalityNames[c+1], true
}

// ParseRequestCriticality parses a [HeaderRequestCriticality] value: "critical",
// "default" or "sheddable" in any ASCII case, at most 9 bytes, with no surrounding space.
// It returns ok false and a nil error when v is empty (the header is absent), the class
// and ok true when v is valid, and a [*ParseError] matching [ErrMalformed] otherwise
// (Unicode case folding is not applied, so a Kelvin sign is not a k). It does not
// allocate unless v is malformed, and is safe for concurrent use.
func ParseRequestCriticality(v string) (c budget.Criticality, ok bool, err error) {
	if v == "" {
		return CriticalityDefault, false, nil
	}
	c, r := parseCriticality(v)
	if r != reasonNone {
		return CriticalityDefault, false, newParseError(HeaderRequestCriticality, v, r)
	}
	return c, true, nil
}

func parseCriticality(v string) (budget.Criticality, reason) {
	if len(v) > len("sheddable") {
		return CriticalityDefault, reasonNotCriticality
	}
	for i, name := range criticalityNames {
		if ascii.EqualFoldLower(v, name) {
			return budget.Criticality(i - 1), reasonNone
		}
	}
	return CriticalityDefault, reasonNotCriticality
}

// readCriticality reads [HeaderRequestCriticality] from h into d: every element of
// every value (up to 16), the least critical valid one winning, as the strictest
// deadline wins, so that a hop cannot raise a class by appending a value. Malformed
// elements are counted in x. It reports whether a valid value was found.
func readCriticality(h Header, x *Extraction) (budget.Criticality, bool) {
	best, found := CriticalityCritical, false
	eachElement(h, &criticalityField, x, func(elem string) reason {
		c, r := parseCriticality(elem)
		if r == reasonNone && (!found || c < best) {
			best, found = c, true
		}
		return r
	})
	if !found {
		return CriticalityDefault, false
	}
	return best, true
}
