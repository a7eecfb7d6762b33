package main

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
	faultSlow               // every call takes the fault's duration
	faultHang               // no call answers; only a caller's cancellation or a deadline ends one
	faultFail               // every call fails at once
	faultSlowdown           // calls take the normal time for the first part of the traffic, then the fault's duration
)

// fault is what --fault injects into one dependency.
type fault struct {
	kind faultKind
	// d is the latency of a slow call (slow, slowdown).
	d time.Duration
	// after is the share of a run's traffic sent before a slowdown starts.
	after float64
}

// String renders the fault in --fault's syntax.
func (f fault) String() string {
	switch f.kind {
	case faultSlow:
		return "slow:" + f.d.String()
	case faultHang:
		return "hang"
	case faultFail:
		return "fail"
	case faultSlowdown:
		s := "slowdown:" + f.d.String()
		if f.after != defaultSlowdownAfter {
			s += "@" + strconv.FormatFloat(f.after, 'g', -1, 64)
		}
		return s
	}
	return "none"
}

// describe says in words what the fault does to a dependency, for the
// report: the --fault syntax is explained only in --help otherwise.
func (f fault) describe() string {
	switch f.kind {
	case faultSlow:
		return "every call takes " + f.d.String()
	case faultHang:
		return "no call answers by itself: only the caller giving up or a deadline ends one"
	case faultFail:
		return "every call fails at once"
	case faultSlowdown:
		return fmt.Sprintf("normal until %.0f%% of the traffic was sent, then every call takes %s", 100*f.after, f.d)
	}
	return "no fault: typical latency, give or take 20%"
}

// defaultSlowdownAfter is the share of a run's requests sent before a slowdown
// fault takes effect when --fault does not say.
const defaultSlowdownAfter = 0.5

// dependencies lists every dependency a fault can be injected into, in the
// order the usage text shows them.
var dependencies = []string{"resolve", "retrieve", "geometry", "inventory", "pricing", "payment"}

// parseFaults parses the value of --fault: a comma-separated list of
// DEP=KIND, where KIND is hang, fail, slow:DUR or slowdown:DUR[@SHARE], or the
// single word none.
func parseFaults(s string) (map[string]fault, error) {
	out := map[string]fault{}
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
func parseFault(spec string) (fault, error) {
	kind, arg, hasArg := strings.Cut(spec, ":")
	switch kind {
	case "none":
		return fault{}, nil
	case "hang", "fail":
		if hasArg {
			return fault{}, fmt.Errorf("%s takes no argument", kind)
		}
		if kind == "hang" {
			return fault{kind: faultHang}, nil
		}
		return fault{kind: faultFail}, nil
	case "slow", "slowdown":
		if !hasArg {
			return fault{}, fmt.Errorf("%s needs a duration, as in %s:1s", kind, kind)
		}
		f := fault{kind: faultSlow, after: defaultSlowdownAfter}
		if kind == "slowdown" {
			f.kind = faultSlowdown
			if durS, shareS, ok := strings.Cut(arg, "@"); ok {
				share, err := strconv.ParseFloat(shareS, 64)
				if err != nil || share < 0 || share >= 1 {
					return fault{}, fmt.Errorf("slowdown share %q is not a number in [0, 1)", shareS)
				}
				arg, f.after = durS, share
			}
		}
		d, err := time.ParseDuration(arg)
		if err != nil {
			return fault{}, fmt.Errorf("%q is not a duration", arg)
		}
		if d <= 0 || d > time.Minute {
			return fault{}, fmt.Errorf("duration %s is outside (0, 1m]", d)
		}
		f.d = d
		return f, nil
	}
	return fault{}, fmt.Errorf("unknown fault %q (hang, fail, slow:DUR or slowdown:DUR[@SHARE])", kind)
}

// formatFaults renders faults in the order of dependencies, as --fault takes them.
func formatFaults(faults map[string]fault) string {
	var parts []string
	for _, dep := range dependencies {
		if f, ok := faults[dep]; ok && f.kind != faultNone {
			parts = append(parts, dep+"="+f.String())
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}
