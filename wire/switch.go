package wire

import (
	"errors"
	"sync/atomic"
	"time"
)

// Switch holds the [Policy] of a running server and lets an operator replace it without
// a restart: loosen it, tighten it, or turn enforcement off. It is the kill switch the
// design promises, in the spirit of userver's dynamic configuration.
//
// "Off" is a nil policy: [Switch.Decide] then reads no header, imposes no deadline and
// refuses nothing, exactly as a nil *Policy does. A nil policy was preferred to a
// Disabled field because it leaves no half-off states to reason about (is Max still
// applied when disabled?) and because "no policy" is what an operator means by off.
//
// The zero Switch is off until a policy is stored. A Switch must not be copied after
// first use. All methods are safe for concurrent use; Load and Decide take no lock and
// do not allocate.
type Switch struct {
	p atomic.Pointer[Policy]
}

// Load returns the current policy, or nil when enforcement is off. The returned policy
// must not be modified. A nil *Switch is off, as the zero Switch is.
func (s *Switch) Load() *Policy {
	if s == nil {
		return nil
	}
	return s.p.Load()
}

// Store replaces the policy; nil turns enforcement off. A policy that [Policy.Validate]
// rejects is not stored: Store returns Validate's error, which matches
// [ErrInvalidPolicy] and names the field, and the running policy stays as it was, so
// that a mistaken reload never loosens or breaks a running server. Store keeps its own
// copy of *p, so the caller may reuse p afterwards. Requests already past Decide keep
// the decision they got; later calls see the new policy. It allocates once.
func (s *Switch) Store(p *Policy) error {
	if s == nil {
		return errNilSwitch
	}
	if err := p.Validate(); err != nil {
		return err
	}
	if p != nil {
		c := *p
		p = &c
	}
	s.p.Store(p)
	return nil
}

// Decide applies the current policy to a request; see [Policy.Decide]. A nil *Switch
// is off.
func (s *Switch) Decide(h Header, now time.Time) (Decision, error) {
	return s.Load().Decide(h, now)
}

// errNilSwitch is what Store on a nil *Switch returns: there is nowhere to keep the
// policy, and a caller who meant to turn enforcement on must hear so.
var errNilSwitch = errors.New("wire: Store on a nil *Switch: the policy was not stored")
