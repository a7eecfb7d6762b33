package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// TestSimDecidesAsTheLibrary replays what sim's ops saw (every admission
// with its virtual time and time available, every end of an attempt with
// its outcome) into standalone budget.Ops configured as the package doc
// says, and requires the same admit/refuse decision at every step: sim has
// no admission of its own that could drift from the library's. A callee with
// a long tail, one that fails now and then, and a hung one make the ops
// refuse on their estimate, throttle, probe and learn from cut-offs.
func TestSimDecidesAsTheLibrary(t *testing.T) {
	t.Parallel()
	top, err := topology.Parse("drift.yaml", []byte(`entry: a
budget: 100ms
services:
  a:
    calls:
      - to: b
        timeout: 80ms
        fallback: [{local: cache, latency: {p50: 1ms, p99: 2ms}}]
      - {to: c, timeout: 50ms, retries: 1}
      - to: d
        share: 0.1
        fallback: [{local: cache, latency: {p50: 1ms, p99: 2ms}}]
  b:
    latency: {p50: 20ms, p99: 90ms}
  c:
    latency: {p50: 5ms, p99: 10ms}
  d:
    latency: {p50: 5ms, p99: 10ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Requests: 5000, Concurrency: 20, Seed: 3,
		Faults: []Fault{{Service: "c", Kind: Fail, P: 0.7}, {Service: "d", Kind: Hang}}}.withDefaults()
	m := compile(top, cfg)
	e := newEngine(m, cfg, Admission)
	var steps []step
	e.trace = func(s step) { steps = append(steps, s) }
	e.run()

	ops := make([]*budget.Op, len(m.ops))
	for i, o := range m.ops {
		ops[i] = &budget.Op{Name: m.names[o.callee], Prior: time.Duration(m.svcs[o.callee].prior),
			Rand: rand.NewPCG(cfg.Seed, uint64(i)+1)}
	}
	base := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	var admits, refusals, probes, throttled int
	for k, s := range steps {
		op := ops[s.op]
		now := base.Add(time.Duration(s.now))
		if !s.begin {
			op.EndAt(base.Add(time.Duration(s.start)), now, s.outcome, s.probe)
			continue
		}
		avail := time.Duration(s.available)
		ask := budget.Ask{Available: avail, Probe: s.asked}
		plain := op.AdmitAt(now, ask) // no side effects: the estimate alone
		dec := op.BeginAt(now, ask)
		if dec.Admit != s.admitted || dec.Probe != s.probe {
			t.Fatalf("step %d (%s at %v, %v available): the library admits %v (probe %v), sim %v (probe %v)",
				k, op.Name, time.Duration(s.now), avail, dec.Admit, dec.Probe, s.admitted, s.probe)
		}
		switch {
		case dec.Probe:
			probes++
		case plain.Admit && !dec.Admit:
			throttled++
		case plain.Admit != dec.Admit:
			t.Fatalf("step %d: AdmitAt says %v, BeginAt %v, and it is no probe", k, plain.Admit, dec.Admit)
		}
		if dec.Admit {
			admits++
		} else {
			refusals++
		}
	}
	t.Logf("%d steps: %d admitted, %d refused (%d throttled), %d probes", len(steps), admits, refusals, throttled, probes)
	if admits < 1000 || refusals < 1000 || probes == 0 || throttled == 0 {
		t.Errorf("the run did not exercise admission: %d admitted, %d refused, %d throttled, %d probes", admits, refusals, throttled, probes)
	}
}
