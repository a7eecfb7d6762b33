package budget

import "context"

type probeKey struct{}

// WithProbe returns a copy of parent marked as a probe: a call sent to find
// out whether a dependency has recovered, while the op that sent it refuses
// other calls on its measurements. [Op.Do] marks the context of every
// attempt it admits as a probe, the transport adapters carry the mark on
// the wire (the Budget-Probe header, under the inbound policy's trust rule),
// and an op downstream admits a marked call as a probe of its own whatever
// its estimate says, so that a probe is a probe end to end: an upstream op
// learns that the whole chain below it has recovered, instead of being
// refused by a hop whose own estimate is as stale as its own (see [Op]).
//
// When parent is already marked it is returned as it is; otherwise the cost
// is what [context.WithValue] costs, one allocation.
func WithProbe(parent context.Context) context.Context {
	if IsProbe(parent) {
		return parent
	}
	return context.WithValue(parent, probeKey{}, true)
}

// IsProbe reports whether ctx is marked as a probe ([WithProbe]). It is one
// context value lookup and does not allocate.
func IsProbe(ctx context.Context) bool {
	p, _ := ctx.Value(probeKey{}).(bool)
	return p
}
