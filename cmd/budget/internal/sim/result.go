package sim

import "slices"

// Result is what one pattern measured. Field names are stable: they appear in
// report.json.
type Result struct {
	// Pattern is the pattern's key (per-call, shared, admission, none) and
	// Name its name in tables.
	Pattern string `json:"pattern"`
	Name    string `json:"name"`
	// Requests is how many requests were sent.
	Requests int `json:"requests"`
	// InBudget, Late and Failed are the shares of requests answered within
	// the budget, answered after it, and not answered (failed, refused, or
	// given up on by the user at GiveUpFactor times the budget).
	InBudget float64 `json:"in_budget"`
	Late     float64 `json:"late"`
	Failed   float64 `json:"failed"`
	// Others counts the requests that never reached a service with a fault
	// (never called it, nor tried to): those that did not need it, and
	// those that never got that far, queued behind workers parked on it.
	// OthersInBudget is the share of them answered within the budget: the
	// goodput of the requests a fault should not touch, which a cascade
	// through the worker pools takes down too.
	Others         int     `json:"others"`
	OthersInBudget float64 `json:"others_in_budget"`
	// CutOff counts the requests the user gave up on.
	CutOff int `json:"cut_off"`
	// LatencyMs is the time to answer or fail, as the user saw it.
	LatencyMs Quantiles `json:"latency_ms"`
	// FailureLatencyMs is the time to fail, over the failed requests only.
	FailureLatencyMs Quantiles `json:"failure_latency_ms"`
	// WastedWorkSeconds adds up, over every invocation, the worker time it
	// held after the request it served was given up (its caller, or a
	// caller further up, stopped waiting). Work still running when the last
	// request ended counts up to that moment.
	WastedWorkSeconds float64 `json:"wasted_work_seconds"`
	// SimulatedSeconds is the virtual time from the first arrival to the
	// last request's end.
	SimulatedSeconds float64 `json:"simulated_seconds"`
	// GoodputPerSecond is the requests answered within the budget per
	// simulated second.
	GoodputPerSecond float64 `json:"goodput_per_second"`
	// RefusedBeforeStarting counts, per callee, the attempts refused
	// before they started because too little time was left.
	RefusedBeforeStarting map[string]int64 `json:"refused_before_starting"`
	// Recovery has, for each fault that ends, how soon the faulty service
	// answered again (see Recovery); absent when no fault ends.
	Recovery []Recovery `json:"recovery,omitempty"`
	// Events is how many events the simulation processed.
	Events int64 `json:"events"`
}

// Quantiles of a latency distribution, in milliseconds.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func quantiles(ns []int64) Quantiles {
	if len(ns) == 0 {
		return Quantiles{}
	}
	slices.Sort(ns)
	at := func(q float64) float64 {
		i := int(q * float64(len(ns)-1))
		return float64(ns[i]) / 1e6
	}
	return Quantiles{P50: at(0.5), P99: at(0.99), Max: float64(ns[len(ns)-1]) / 1e6}
}

func (e *engine) result() Result {
	n := e.ended
	r := Result{Pattern: e.pat.Key(), Name: e.pat.String(), Requests: n, CutOff: e.cutOff,
		WastedWorkSeconds: float64(e.waste) / 1e9, Events: e.events,
		SimulatedSeconds:      float64(e.last-e.first) / 1e9,
		RefusedBeforeStarting: map[string]int64{}, Recovery: e.recoveries()}
	all := make([]int64, 0, n)
	var failed []int64
	var in, late, unIn int
	for i := range e.sent {
		if !e.done[i] {
			continue
		}
		if !e.faulty[i] {
			r.Others++
			if e.outcome[i] == outInBudget {
				unIn++
			}
		}
		all = append(all, e.lat[i])
		switch e.outcome[i] {
		case outInBudget:
			in++
		case outLate:
			late++
		default:
			failed = append(failed, e.lat[i])
		}
	}
	if n > 0 {
		r.InBudget, r.Late, r.Failed = float64(in)/float64(n), float64(late)/float64(n), float64(len(failed))/float64(n)
	}
	if r.Others > 0 {
		r.OthersInBudget = float64(unIn) / float64(r.Others)
	}
	if r.SimulatedSeconds > 0 {
		r.GoodputPerSecond = float64(in) / r.SimulatedSeconds
	}
	r.LatencyMs = quantiles(all)
	r.FailureLatencyMs = quantiles(failed)
	for i, c := range e.refused {
		if c > 0 {
			r.RefusedBeforeStarting[e.m.names[i]] = c
		}
	}
	return r
}

// recoveries returns the recovery from each fault that ends, in the order
// of Config.Faults.
func (e *engine) recoveries() []Recovery {
	var out []Recovery
	for i := range e.cfg.Faults {
		if f := &e.cfg.Faults[i]; f.Ends() {
			out = append(out, e.rec[i].figures(f, e.lastSent))
		}
	}
	return out
}
