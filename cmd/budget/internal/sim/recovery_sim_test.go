package sim_test

import (
	"math"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/sim"
)

// TestRecoveryThreeHops runs a → b → c → db with db=hang@2s-5s, one user in
// a closed loop and latencies without spread, so that the recovery of the
// patterns that hand no estimate down can be worked out by hand:
//
// db answers in 7 ms, and a request takes 7 ms plus the user's 1 ms pause:
// one every 8 ms, 250 answers in the 2 s before the fault (125/s), so the
// windows are 160 ms (20 answers' time) and need 18 answers. The request
// sent at 2 s hangs; c's 50 ms timeout (min(50 ms, the time left) under a
// shared deadline) fails it, and the next comes 51 ms later: at
// 2000 + 51·58 = 4958 ms the last one starts during the fault, is released
// at 5 s and answers at 5007 ms, 49 ms after it started, within c's
// timeout. From then on one answer every 8 ms: 20 in [5000, 5160).
//
// Without timeouts the request sent at 2 s waits until the user gives up
// at 600 ms; each next one 601 ms later: the one sent at 4404 ms is given
// up at 5004 ms, before db answers it at 5007; the next, at 5005 ms,
// answers at 5012 ms, and the 19 from then to 5160 are enough.
func TestRecoveryThreeHops(t *testing.T) {
	t.Parallel()
	top := parse(t, `entry: a
budget: 200ms
services:
  a:
    calls: [{to: b, timeout: 100ms}]
  b:
    calls: [{to: c, timeout: 80ms}]
  c:
    calls: [{to: db, timeout: 50ms}]
  db:
    latency: {p50: 7ms, p99: 7ms}
`)
	fault := sim.Fault{Service: "db", Kind: sim.Hang, Start: 2 * time.Second, End: 5 * time.Second}
	r := byPattern(t, top, sim.Config{Requests: 1200, Concurrency: 1, Faults: []sim.Fault{fault}})
	tests := []struct {
		pattern     string
		first, rate float64 // ms after the fault's end
	}{
		{"per-call", 7, 160},
		{"shared", 7, 160},
		{"none", 12, 160},
	}
	for _, tt := range tests {
		got := r[tt.pattern].Recovery
		if len(got) != 1 {
			t.Fatalf("%s: %d recovery figures, want 1", tt.pattern, len(got))
		}
		g := got[0]
		if g.Fault != "db=hang@2s-5s" || !g.Ended || g.PreFaultPerSecond != 125 || g.WindowMs != 160 {
			t.Errorf("%s: fault %q ended %v, %v answers/s before, windows of %vms; want db=hang@2s-5s, true, 125, 160",
				tt.pattern, g.Fault, g.Ended, g.PreFaultPerSecond, g.WindowMs)
		}
		if g.FirstAnswerMs == nil || *g.FirstAnswerMs != tt.first || g.RateMs == nil || *g.RateMs != tt.rate {
			t.Errorf("%s: first answer %s, 90%% of the rate %s after the fault's end; want %vms and %vms",
				tt.pattern, g.FirstAnswer, g.Rate, tt.first, tt.rate)
		}
	}
	// Every pattern goes on to RecoveryHorizon past the fault's end, the
	// fastest included, sending more than the 1,200 requests asked for.
	for p, res := range r {
		if res.SimulatedSeconds < (5*time.Second+sim.RecoveryHorizon).Seconds()-0.1 || res.Requests <= 1200 {
			t.Errorf("%s: ran %.3fs of virtual time, %d requests; want at least %s after the fault's end",
				p, res.SimulatedSeconds, res.Requests, sim.RecoveryHorizon)
		}
	}
	// Admission's figures depend on its ops' estimates and probes; they
	// must be stated the same way, a time or "never" (null), never 0 for
	// an answer that did not come.
	ad := r["admission"].Recovery
	if len(ad) != 1 {
		t.Fatalf("admission: %d recovery figures, want 1", len(ad))
	}
	if g := ad[0]; (g.FirstAnswerMs == nil) != (g.FirstAnswer == "never") || (g.RateMs == nil) != (g.Rate == "never") ||
		(g.RateMs != nil && (g.FirstAnswerMs == nil || *g.RateMs < *g.FirstAnswerMs)) {
		t.Errorf("admission: inconsistent figures %+v", g)
	}
	t.Logf("admission: first answer %s, 90%% of the rate %s", ad[0].FirstAnswer, ad[0].Rate)
}

// TestFaultsThatEnd checks each kind of fault with a window on one service
// and one user: calls fail, slow down or hang only from its start to its
// end, and only K of every N with K/N. Before the fault at 1 s a request
// takes db's 4 ms and the user's 1 ms pause: 200 answered.
func TestFaultsThatEnd(t *testing.T) {
	t.Parallel()
	top := parse(t, `entry: a
budget: 100ms
services:
  a:
    calls: [{to: db, timeout: 50ms}]
  db:
    latency: {p50: 4ms, p99: 4ms}
`)
	tests := []struct {
		name   string
		fault  sim.Fault
		failed int     // requests that fail
		max    float64 // the longest request, ms
	}{
		// Hung calls time out at 50 ms, one every 51 ms from 1,000 ms:
		// 20 start in the fault; the last, at 1,969 ms, is released at
		// 2 s and answers at 2,004 ms, within its timeout.
		{"hang", sim.Fault{Kind: sim.Hang}, 19, 50},
		// Fast errors: one every 1 ms, from 1,000 to 1,999 ms.
		{"error", sim.Fault{Kind: sim.Error}, 1000, 4},
		// 21 ms each, none failing.
		{"slow", sim.Fault{Kind: sim.Slow, Latency: 20 * time.Millisecond}, 0, 20},
		// Every other call hangs: a failure and an answer every 56 ms from
		// 1,000 ms, 18 hung (the last at 1,952 ms, timed out at 2,002 ms
		// just before it would have answered at 2,004 ms).
		{"hang 1 of 2", sim.Fault{Kind: sim.Hang, K: 1, N: 2}, 18, 50},
		// Nothing changes when the fault is off: fail:1 to 1 s only.
		{"fail", sim.Fault{Kind: sim.Fail, P: 1}, 1000, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := tt.fault
			f.Service, f.Start, f.End = "db", time.Second, 2*time.Second
			r := byPattern(t, top, sim.Config{Requests: 2000, Concurrency: 1, Faults: []sim.Fault{f}})["per-call"]
			if failed := int(math.Round(r.Failed * float64(r.Requests))); failed != tt.failed || r.LatencyMs.Max != tt.max {
				t.Errorf("%d requests failed, the longest took %vms; want %d and %vms", failed, r.LatencyMs.Max, tt.failed, tt.max)
			}
			if len(r.Recovery) != 1 || r.Recovery[0].FirstAnswerMs == nil || r.Recovery[0].PreFaultPerSecond != 200 {
				t.Errorf("recovery %+v, want one figure with a first answer and 200 answers/s before", r.Recovery)
			}
		})
	}
}
