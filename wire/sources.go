package wire

import "strings"

// Sources is a set of inbound deadline headers. A [Policy] uses it to say which headers a
// server trusts, and a [Decision] uses a single member to say which header won. The zero
// value is the empty set. Sources is a plain value: copying it is free and it is safe for
// concurrent use.
type Sources uint16

// The inbound sources, one per header. Each is a set with one member.
const (
	// SourceRequestTimeout is [HeaderRequestTimeout].
	SourceRequestTimeout Sources = 1 << iota
	// SourceGRPCTimeout is [HeaderGRPCTimeout].
	SourceGRPCTimeout
	// SourceConnectTimeout is [HeaderConnectTimeout].
	SourceConnectTimeout
	// SourceEnvoyExpectedTimeout is [HeaderEnvoyExpectedTimeout].
	SourceEnvoyExpectedTimeout
	// SourceContextTTL is [HeaderContextTTL].
	SourceContextTTL
	// SourceRequestDeadline is [HeaderRequestDeadline].
	SourceRequestDeadline
	// SourceXRequestDeadline is [HeaderXRequestDeadline].
	SourceXRequestDeadline
	// SourceL5DDeadline is [HeaderL5DDeadline].
	SourceL5DDeadline
	// SourceFinagleDeadline is [HeaderFinagleDeadline].
	SourceFinagleDeadline
	// SourceRequestCriticality is [HeaderRequestCriticality]. It sets no deadline: a
	// policy that trusts it takes the request's class from the header, and one that
	// does not (an edge with [SourcesNone]) applies its own Criticality.
	SourceRequestCriticality
	// SourceProbe is [HeaderBudgetProbe]. It sets no deadline: a policy that trusts
	// it admits a request marked as a probe as a probe of its own
	// ([Decision.Probe]), and one that does not (an edge with [SourcesNone])
	// ignores the mark, so that a client cannot have its calls admitted past a
	// refusing op by marking them.
	SourceProbe
)

// Named sets of sources.
const (
	// SourcesOurs is this library's own pair, [HeaderRequestTimeout] and
	// [HeaderRequestDeadline].
	SourcesOurs = SourceRequestTimeout | SourceRequestDeadline

	// SourcesDefault is what a zero [Policy] trusts: every source except the Finagle
	// and linkerd deadlines, which are opt-in because few fleets run them and both are
	// absolute values that depend on clocks agreeing.
	SourcesDefault = SourcesAll &^ (SourceL5DDeadline | SourceFinagleDeadline)

	// SourcesAll is every inbound source this package reads, [SourceRequestCriticality]
	// and [SourceProbe] included.
	SourcesAll = SourceRequestTimeout | SourceGRPCTimeout | SourceConnectTimeout |
		SourceEnvoyExpectedTimeout | SourceContextTTL | SourceRequestDeadline |
		SourceXRequestDeadline | SourceL5DDeadline | SourceFinagleDeadline |
		SourceRequestCriticality | SourceProbe

	// SourcesNone trusts nothing: an edge that ignores whatever clients send and starts
	// every request fresh from [Policy.Default]. It is a marker distinct from the zero
	// value, because the zero value of [Policy.Trust] means [SourcesDefault]. It may be
	// combined with other sources, in which case it has no effect.
	SourcesNone Sources = 1 << 15
)

// Has reports whether every source in t is in s.
func (s Sources) Has(t Sources) bool { return s&t == t }

// Header returns the header name of a single source, such as "Request-Timeout-Ms" for
// [SourceRequestTimeout], or "" when s does not hold exactly one source. It does not
// allocate, so it suits telemetry attributes such as budget.source.
func (s Sources) Header() string {
	s &= SourcesAll
	if s == 0 || s&(s-1) != 0 {
		return ""
	}
	for i := range fields {
		if fields[i].src == s {
			return fields[i].name
		}
	}
	switch s {
	case SourceRequestCriticality:
		return HeaderRequestCriticality
	case SourceProbe:
		return HeaderBudgetProbe
	}
	return ""
}

// String returns the header names in s joined by "|", or "none" for a set with no
// source. A single source does not allocate.
func (s Sources) String() string {
	s &= SourcesAll
	if s == 0 {
		return "none"
	}
	if h := s.Header(); h != "" {
		return h
	}
	var b strings.Builder
	for i := range fields {
		if s&fields[i].src != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(fields[i].name)
		}
	}
	if s&SourceRequestCriticality != 0 {
		b.WriteString("|" + HeaderRequestCriticality)
	}
	if s&SourceProbe != 0 {
		b.WriteString("|" + HeaderBudgetProbe)
	}
	return b.String()
}
