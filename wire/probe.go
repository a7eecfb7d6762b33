package wire

import "strings"

// HeaderBudgetProbe marks a request sent as a probe: a call that an upstream sends to
// find out whether a dependency has recovered while it refuses other calls on its
// measurements. Its value is "1"; "0" says the request is not a probe, and a receiver
// treats any other value as malformed. Senders write it only for a probe. A receiver
// reads it only under a policy that trusts [SourceProbe], and then admits the request
// downstream as a probe of its own (budget.WithProbe), so that a probe is a probe end
// to end. gRPC metadata and AMQP headers carry it as "budget-probe".
const HeaderBudgetProbe = "Budget-Probe"

// probeField describes [HeaderBudgetProbe] for errors and lookups. It is not in the
// fields table, which lists deadline sources only.
var probeField = field{
	src:       SourceProbe,
	name:      HeaderBudgetProbe,
	lower:     "budget-probe",
	canonical: "Budget-Probe",
}

// ProbeValue is the [HeaderBudgetProbe] value a sender writes for a probe.
const ProbeValue = "1"

// ParseBudgetProbe parses a [HeaderBudgetProbe] value: "1" for a probe, "0" for a
// request that is not one, with no surrounding space. It returns ok false and a nil
// error when v is empty (the header is absent), probe and ok true when v is valid, and a
// [*ParseError] matching [ErrMalformed] otherwise. It does not allocate unless v is
// malformed, and is safe for concurrent use.
func ParseBudgetProbe(v string) (probe, ok bool, err error) {
	if v == "" {
		return false, false, nil
	}
	p, r := parseProbe(v)
	if r != reasonNone {
		return false, false, newParseError(HeaderBudgetProbe, v, r)
	}
	return p, true, nil
}

func parseProbe(v string) (bool, reason) {
	switch v {
	case "1":
		return true, reasonNone
	case "0":
		return false, reasonNone
	}
	return false, reasonNotProbe
}

// readProbe reads [HeaderBudgetProbe] from h: a request is a probe when every valid
// element says so, as a class takes the least critical value, so that a hop cannot turn
// a request into a probe by appending a value. Malformed elements are counted in x.
func readProbe(h Header, x *Extraction) bool {
	probe, found := true, false
	eachElement(h, &probeField, x, func(elem string) reason {
		p, r := parseProbe(elem)
		if r == reasonNone {
			probe, found = probe && p, true
		}
		return r
	})
	return probe && found
}

// eachElement calls visit with every element of every value of the header f in h (up
// to 16), as HTTP's list syntax allows: empty elements are skipped and spaces or tabs
// around an element are ignored. An element visit finds malformed, and the 17th, are
// counted in x.
func eachElement(h Header, f *field, x *Extraction, visit func(elem string) reason) {
	switch hh := h.(type) {
	case HTTPHeader:
		eachValue(hh[f.canonical], f, x, visit)
	case Metadata:
		eachValue(hh[f.lower], f, x, visit)
	default:
		eachValue(h.Values(f.lower), f, x, visit)
	}
}

// eachValue is eachElement over the values vals of the header f.
func eachValue(vals []string, f *field, x *Extraction, visit func(elem string) reason) {
	n := 0
	for _, line := range vals {
		for rest := line; ; {
			elem, tail, more := strings.Cut(rest, ",")
			elem = trimOWS(elem)
			if n++; n > maxValues {
				x.malformed(f, elem, reasonTooMany)
				return
			}
			if elem != "" {
				if r := visit(elem); r != reasonNone {
					x.malformed(f, elem, r)
				}
			}
			if !more {
				break
			}
			rest = tail
		}
	}
}
