package wire

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalidPolicy is matched, with [errors.Is], by every error [Policy.Validate] returns.
var ErrInvalidPolicy = errors.New("wire: invalid policy")

// Validate reports the first mistake in p, as an error matching [ErrInvalidPolicy] that
// names the field and the problem, or nil when p is usable as it stands. A nil *Policy
// (enforcement off) is valid. It is meant for the moment configuration loads:
// [Switch.Store] calls it, and so do the adapters' constructors, so that a mistake is
// reported once and loudly rather than silently ignored on every request.
//
// Mistakes are:
//
//   - a negative Max, Default, Min, AnswerMargin or Skew ([Policy.Decide] would treat it as
//     zero, which is never what a negative value was meant to say);
//   - a Trust with bits that name no source (such a set reads nothing a client sends);
//   - a Max, or a Default, that leaves the handler less than Min once AnswerMargin is set
//     aside: every request under it would be shed on arrival.
//
// A Default larger than Max is not a mistake: it is clamped to Max, as documented. It
// does not allocate when p is valid and is safe for concurrent use.
func (p *Policy) Validate() error {
	if p == nil {
		return nil
	}
	for _, f := range [...]struct {
		name string
		v    time.Duration
	}{{"Max", p.Max}, {"Default", p.Default}, {"Min", p.Min}, {"AnswerMargin", p.AnswerMargin}, {"Skew", p.Skew}} {
		if f.v < 0 {
			return fmt.Errorf("%w: Policy.%s is negative (%v); zero means %s", ErrInvalidPolicy, f.name, f.v, zeroMeaning(f.name))
		}
	}
	if p.Criticality < CriticalitySheddable || p.Criticality > CriticalityCritical {
		return fmt.Errorf("%w: Policy.Criticality is %d; the classes are -1 (sheddable), 0 (default) and 1 (critical)", ErrInvalidPolicy, p.Criticality)
	}
	if extra := p.Trust &^ (SourcesAll | SourcesNone); extra != 0 {
		return fmt.Errorf("%w: Policy.Trust has bits %#x that name no source", ErrInvalidPolicy, uint16(extra))
	}
	for _, f := range [...]struct {
		name string
		v    time.Duration
	}{{"Max", p.Max}, {"Default", p.Default}} {
		if f.v > 0 && (f.v <= p.AnswerMargin || f.v-p.AnswerMargin < p.Min) {
			return fmt.Errorf("%w: Policy.%s (%v) leaves less than Min (%v) once AnswerMargin (%v) is set aside: every request under it would be shed",
				ErrInvalidPolicy, f.name, f.v, p.Min, p.AnswerMargin)
		}
	}
	return nil
}

func zeroMeaning(field string) string {
	switch field {
	case "Max":
		return "no cap"
	case "Default":
		return "Max, or no deadline without Max"
	case "Min":
		return "shed only requests with no time left"
	case "AnswerMargin":
		return "keep nothing back"
	default:
		return "DefaultSkew (" + DefaultSkew.String() + ")"
	}
}
