package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// FaultKind says how a fault changes a service.
type FaultKind int

// The kinds of fault --fault can inject.
const (
	// Hang: no call answers by itself; only its caller's cancellation (for a
	// cancellable service) or the deadline handed to it ends one.
	Hang FaultKind = iota + 1
	// Slow: every call takes the fault's duration.
	Slow
	// Fail: each call fails at once with the fault's probability.
	Fail
)

// Fault is a fault injected into one service and every service that names it
// as its host.
type Fault struct {
	// Service is the service the fault is injected into.
	Service string
	// Kind says what the fault does.
	Kind FaultKind
	// Latency is how long every call takes under a Slow fault.
	Latency time.Duration
	// P is the probability that a call fails under a Fail fault, in (0, 1].
	P float64
}

// String renders the fault as --fault takes it.
func (f Fault) String() string {
	switch f.Kind {
	case Hang:
		return f.Service + "=hang"
	case Slow:
		return f.Service + "=slow:" + f.Latency.String()
	case Fail:
		return f.Service + "=fail:" + strconv.FormatFloat(f.P, 'g', -1, 64)
	}
	return f.Service + "=none"
}

// ParseFault parses one --fault value, SERVICE=hang, SERVICE=slow:DURATION or
// SERVICE=fail:P, and checks that SERVICE is declared in t.
func ParseFault(t *topology.Topology, s string) (Fault, error) {
	svc, spec, ok := strings.Cut(s, "=")
	if !ok || svc == "" {
		return Fault{}, fmt.Errorf("%q is not SERVICE=KIND (for example db=hang)", s)
	}
	if _, ok := t.Services[svc]; !ok {
		return Fault{}, fmt.Errorf("%q: unknown service %q", s, svc)
	}
	kind, arg, hasArg := strings.Cut(spec, ":")
	f := Fault{Service: svc}
	switch kind {
	case "hang":
		if hasArg {
			return Fault{}, fmt.Errorf("%q: hang takes no argument", s)
		}
		f.Kind = Hang
	case "slow":
		d, err := time.ParseDuration(arg)
		if !hasArg || err != nil || d <= 0 || d > topology.MaxDuration {
			return Fault{}, fmt.Errorf("%q: slow needs a duration in (0, %s], as in slow:2s", s, topology.MaxDuration)
		}
		f.Kind, f.Latency = Slow, d
	case "fail":
		p, err := strconv.ParseFloat(arg, 64)
		if !hasArg || err != nil || !(p > 0 && p <= 1) {
			return Fault{}, fmt.Errorf("%q: fail needs a probability in (0, 1], as in fail:0.5", s)
		}
		f.Kind, f.P = Fail, p
	default:
		return Fault{}, fmt.Errorf("%q: unknown fault %q (hang, slow:DURATION or fail:P)", s, kind)
	}
	return f, nil
}
