package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// faultKind says how an injected fault changes a dependency.
type faultKind int

const (
	faultNone     faultKind = iota
	FaultSlow               // every call takes the fault's duration
	FaultHang               // no call answers; only a caller's cancellation or a deadline ends one
	FaultFail               // every call fails at once
	FaultSlowdown           // calls take the normal time for the first part of the traffic, then the fault's duration
)

// Fault is what --fault injects into one dependency.
type Fault struct {
	Kind faultKind
	// D is the latency of a slow call (slow, slowdown).
	D time.Duration
	// After is the share of a run's traffic sent before a slowdown starts.
	After float64
}

// String renders the fault in --fault's syntax.
func (f Fault) String() string {
	switch f.Kind {
	case FaultSlow:
		return "slow:" + f.D.String()
	case FaultHang:
		return "hang"
	case FaultFail:
		return "fail"
	case FaultSlowdown:
		s := "slowdown:" + f.D.String()
		if f.After != defaultSlowdownAfter {
			s += "@" + strconv.FormatFloat(f.After, 'g', -1, 64)
		}
		return s
	}
	return "none"
}

// Describe says in words what the fault does to a dependency, for the
// report: the --fault syntax is explained only in --help otherwise.
func (f Fault) Describe() string {
	switch f.Kind {
	case FaultSlow:
		return "every call takes " + f.D.String()
	case FaultHang:
		return "no call answers by itself: only the caller giving up or a deadline ends one"
	case FaultFail:
		return "every call fails at once"
	case FaultSlowdown:
		return fmt.Sprintf("normal until %.0f%% of the traffic was sent, then every call takes %s", 100*f.After, f.D)
	}
	return "no fault: typical latency, give or take 20%"
}

// defaultSlowdownAfter is the share of a run's requests sent before a slowdown
// fault takes effect when --fault does not say.
const defaultSlowdownAfter = 0.5

// dependencies lists every dependency a fault can be injected into, in the
// order the usage text shows them.
var dependencies = []string{"resolve", "retrieve", "geometry", "inventory", "pricing", "payment"}

// ParseFaults parses the value of --fault: a comma-separated list of
// DEP=KIND, where KIND is hang, fail, slow:DUR or slowdown:DUR[@SHARE], or the
// single word none.
func ParseFaults(s string) (map[string]Fault, error) {
	out := map[string]Fault{}
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return out, nil
	}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		dep, spec, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not DEP=KIND (for example geometry=hang)", item)
		}
		if !slices.Contains(dependencies, dep) {
			return nil, fmt.Errorf("unknown dependency %q (one of %s)", dep, strings.Join(dependencies, ", "))
		}
		if _, dup := out[dep]; dup {
			return nil, fmt.Errorf("dependency %q named twice", dep)
		}
		f, err := parseFault(spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dep, err)
		}
		out[dep] = f
	}
	return out, nil
}

// parseFault parses one KIND of --fault: hang, fail, slow:DUR or
// slowdown:DUR[@SHARE].
func parseFault(spec string) (Fault, error) {
	kind, arg, hasArg := strings.Cut(spec, ":")
	switch kind {
	case "none":
		return Fault{}, nil
	case "hang", "fail":
		if hasArg {
			return Fault{}, fmt.Errorf("%s takes no argument", kind)
		}
		if kind == "hang" {
			return Fault{Kind: FaultHang}, nil
		}
		return Fault{Kind: FaultFail}, nil
	case "slow", "slowdown":
		if !hasArg {
			return Fault{}, fmt.Errorf("%s needs a duration, as in %s:1s", kind, kind)
		}
		f := Fault{Kind: FaultSlow, After: defaultSlowdownAfter}
		if kind == "slowdown" {
			f.Kind = FaultSlowdown
			if durS, shareS, ok := strings.Cut(arg, "@"); ok {
				share, err := strconv.ParseFloat(shareS, 64)
				if err != nil || share < 0 || share >= 1 {
					return Fault{}, fmt.Errorf("slowdown share %q is not a number in [0, 1)", shareS)
				}
				arg, f.After = durS, share
			}
		}
		d, err := time.ParseDuration(arg)
		if err != nil {
			return Fault{}, fmt.Errorf("%q is not a duration", arg)
		}
		if d <= 0 || d > time.Minute {
			return Fault{}, fmt.Errorf("duration %s is outside (0, 1m]", d)
		}
		f.D = d
		return f, nil
	}
	return Fault{}, fmt.Errorf("unknown fault %q (hang, fail, slow:DUR or slowdown:DUR[@SHARE])", kind)
}

// FormatFaults renders faults in the order of dependencies, as --fault takes them.
func FormatFaults(faults map[string]Fault) string {
	var parts []string
	for _, dep := range dependencies {
		if f, ok := faults[dep]; ok && f.Kind != faultNone {
			parts = append(parts, dep+"="+f.String())
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}
