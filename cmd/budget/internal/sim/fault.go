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
	// cancellable service) or the deadline handed to it ends one. A call
	// hung by a fault that ends is released when it ends: it then does its
	// usual work and answers, as a database answers the queries it held
	// once the lock that held them is released.
	Hang FaultKind = iota + 1
	// Slow: every call takes the fault's duration.
	Slow
	// Fail: each call fails at once with the fault's probability.
	Fail
	// Error: every call fails at once, a fast error.
	Error
)

// Fault is a fault injected into one service and every service that names it
// as its host, for the whole run or for a window of it, on every call or on
// k of every n.
type Fault struct {
	// Service is the service the fault is injected into.
	Service string
	// Kind says what the fault does.
	Kind FaultKind
	// Latency is how long every call takes under a Slow fault.
	Latency time.Duration
	// P is the probability that a call fails under a Fail fault, in (0, 1].
	P float64
	// K of every N calls are faulty, counted in the order the calls start
	// while the fault is on: the first K of each N. N zero means every call.
	K, N int
	// Start and End are when the fault begins and ends, in virtual time
	// from the run's first request: a call that starts in [Start, End) is
	// faulty. End zero means the fault lasts to the end of the run.
	Start, End time.Duration
}

// Ends reports whether the fault ends within the run it is given to (if
// the run lasts that long): whether it has an End.
func (f Fault) Ends() bool { return f.End > 0 }

// on reports whether a call that starts at virtual time now meets the
// fault's window.
func (f Fault) on(now int64) bool {
	return now >= int64(f.Start) && (f.End == 0 || now < int64(f.End))
}

// check reports what is wrong with a fault built by hand rather than by
// ParseFault, or nil.
func (f Fault) check() error {
	switch {
	case f.Kind < Hang || f.Kind > Error:
		return fmt.Errorf("unknown kind %d", f.Kind)
	case f.Kind == Slow && (f.Latency <= 0 || f.Latency > topology.MaxDuration):
		return fmt.Errorf("latency %s is outside (0, %s]", f.Latency, topology.MaxDuration)
	case f.Kind == Fail && !(f.P > 0 && f.P <= 1):
		return fmt.Errorf("probability %g is outside (0, 1]", f.P)
	case f.Kind == Fail && f.N != 0:
		return fmt.Errorf("fail takes no K/N")
	case f.N < 0 || f.N > 1_000_000 || (f.N > 0 && (f.K < 1 || f.K > f.N)) || (f.N == 0 && f.K != 0):
		return fmt.Errorf("%d of %d calls is not 1 ≤ K ≤ N ≤ 1000000", f.K, f.N)
	case f.Start < 0 || f.Start > topology.MaxDuration || f.End < 0 || f.End > topology.MaxDuration:
		return fmt.Errorf("window %s-%s is outside [0, %s]", f.Start, f.End, topology.MaxDuration)
	case f.End != 0 && f.End <= f.Start:
		return fmt.Errorf("it ends (%s) before it starts (%s)", f.End, f.Start)
	}
	return nil
}

// String renders the fault as --fault takes it.
func (f Fault) String() string {
	var s string
	switch f.Kind {
	case Hang:
		s = "hang"
	case Slow:
		s = "slow:" + f.Latency.String()
	case Fail:
		s = "fail:" + strconv.FormatFloat(f.P, 'g', -1, 64)
	case Error:
		s = "error"
	default:
		s = "none"
	}
	if f.N > 0 {
		s += fmt.Sprintf(":%d/%d", f.K, f.N)
	}
	if f.End > 0 {
		s += "@" + f.Start.String() + "-" + f.End.String()
	} else if f.Start > 0 {
		s += "@" + f.Start.String()
	}
	return f.Service + "=" + s
}

// faultSyntax is what --fault takes, for error messages.
const faultSyntax = "SERVICE=KIND[:K/N][@START[-END]], KIND one of hang, slow:DURATION, error or fail:P"

// ParseFault parses one --fault value and checks that SERVICE is declared
// in t. The value is SERVICE=KIND, optionally followed by :K/N (only K of
// every N calls are faulty) and by @START-END (the fault begins START into
// the run and ends at END; @START alone lasts to the end of the run). KIND
// is hang, slow:DURATION, error (every call fails at once) or fail:P (each
// call fails at once with probability P; it takes no K/N). For example
// db=hang, db=slow:200ms@2s-5s, db=error@2s-5s, db=hang:1/3@2s-5s.
func ParseFault(t *topology.Topology, s string) (Fault, error) {
	svc, spec, ok := strings.Cut(s, "=")
	if !ok || svc == "" {
		return Fault{}, fmt.Errorf("%q is not %s (for example db=hang@2s-5s)", s, faultSyntax)
	}
	if _, ok := t.Services[svc]; !ok {
		return Fault{}, fmt.Errorf("%q: unknown service %q", s, svc)
	}
	spec, window, timed := strings.Cut(spec, "@")
	f := Fault{Service: svc}
	if timed {
		if err := f.parseWindow(window); err != nil {
			return Fault{}, fmt.Errorf("%q: %v", s, err)
		}
	}
	kind, arg, hasArg := strings.Cut(spec, ":")
	// The last :K/N, when there is one, is the share of calls.
	if i := strings.LastIndexByte(arg, ':'); hasArg && (i >= 0 || strings.Contains(arg, "/")) {
		share := arg[i+1:]
		if i >= 0 {
			arg = arg[:i]
		} else {
			arg, hasArg = "", false
		}
		if err := f.parseShare(share); err != nil {
			return Fault{}, fmt.Errorf("%q: %v", s, err)
		}
	}
	switch kind {
	case "hang", "error":
		if hasArg {
			return Fault{}, fmt.Errorf("%q: %s takes no argument but :K/N (as in %s:1/3)", s, kind, kind)
		}
		f.Kind = Hang
		if kind == "error" {
			f.Kind = Error
		}
	case "slow":
		d, err := time.ParseDuration(arg)
		if !hasArg || err != nil || d <= 0 || d > topology.MaxDuration {
			return Fault{}, fmt.Errorf("%q: slow needs a duration in (0, %s], as in slow:200ms or slow:200ms:1/3", s, topology.MaxDuration)
		}
		f.Kind, f.Latency = Slow, d
	case "fail":
		if f.N > 0 {
			return Fault{}, fmt.Errorf("%q: fail:P takes no K/N (P is already the share of calls that fail)", s)
		}
		p, err := strconv.ParseFloat(arg, 64)
		if !hasArg || err != nil || !(p > 0 && p <= 1) {
			return Fault{}, fmt.Errorf("%q: fail needs a probability in (0, 1], as in fail:0.5", s)
		}
		f.Kind, f.P = Fail, p
	default:
		return Fault{}, fmt.Errorf("%q: unknown fault %q (hang, slow:DURATION, error or fail:P)", s, kind)
	}
	return f, nil
}

// parseWindow parses START-END or START into f.
func (f *Fault) parseWindow(w string) error {
	from, to, hasEnd := strings.Cut(w, "-")
	start, err := time.ParseDuration(from)
	if err != nil || start < 0 || start > topology.MaxDuration {
		return fmt.Errorf("start %q is not a duration in [0, %s], as in @2s-5s", from, topology.MaxDuration)
	}
	f.Start = start
	if !hasEnd {
		return nil
	}
	end, err := time.ParseDuration(to)
	if err != nil || end <= 0 || end > topology.MaxDuration {
		return fmt.Errorf("end %q is not a duration in (0, %s], as in @2s-5s", to, topology.MaxDuration)
	}
	if end <= start {
		return fmt.Errorf("the fault ends (%s) before it starts (%s)", end, start)
	}
	f.End = end
	return nil
}

// parseShare parses K/N into f.
func (f *Fault) parseShare(share string) error {
	ks, ns, ok := strings.Cut(share, "/")
	k, errK := strconv.Atoi(ks)
	n, errN := strconv.Atoi(ns)
	if !ok || errK != nil || errN != nil || k < 1 || n < k || n > 1_000_000 {
		return fmt.Errorf("%q is not K/N, K of every N calls with 1 ≤ K ≤ N ≤ 1000000, as in 1/3", share)
	}
	f.K, f.N = k, n
	return nil
}
