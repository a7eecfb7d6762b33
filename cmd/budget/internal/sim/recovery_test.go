package sim

import (
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// TestRecoveryFigures feeds answers at known times to the recovery
// tracking and checks both figures against the definitions worked out by
// hand: the rate before the fault, the width of the windows, the first
// window that reaches 90 % of the rate, "never" and "n/a".
func TestRecoveryFigures(t *testing.T) {
	t.Parallel()
	ms := int64(time.Millisecond)
	// Answers every 5 ms from 0 to the fault at 1 s (200 answers: 200/s,
	// 20 in 100 ms, so windows of 100 ms that need 18 answers), none during
	// the fault (1 s to 2 s).
	steady := func(r *recTrack, f *Fault) {
		for at := int64(0); at < int64(f.Start); at += 5 * ms {
			r.answer(at, f)
		}
		for at := int64(f.Start); at < int64(f.End); at += ms {
			r.answer(at, f) // answers during the fault count for nothing
		}
	}
	f := Fault{Service: "db", Kind: Hang, Start: time.Second, End: 2 * time.Second}
	tests := []struct {
		name      string
		after     []int64 // answers, ns after the fault's end
		lastSent  int64   // ns after the fault's end
		first     string
		rate      string
		firstMs   float64 // when first is not "never"
		rateMs    float64 // when rate is not "never"
		windowMs  float64
		perSecond float64
	}{
		{
			// 10 answers in the first window, then one every 5 ms from
			// 130 ms: the window [100, 200) holds 14 (130..195), too few;
			// [200, 300) holds 20.
			name:  "second window short, third full",
			after: append(every(3*ms, 10*ms, 10), every(130*ms, 5*ms, 60)...), lastSent: int64(time.Second),
			first: "3.0ms", firstMs: 3, rate: "300ms", rateMs: 300, windowMs: 100, perSecond: 200,
		},
		{
			// 18 answers, exactly 90 % of 20, in the first window.
			name: "exactly 90 percent", after: every(0, 5*ms, 18), lastSent: int64(time.Second),
			first: "0.0ms", firstMs: 0, rate: "100ms", rateMs: 100, windowMs: 100, perSecond: 200,
		},
		{
			// 17 per window: never 90 %, however long.
			name: "never at 85 percent", after: every(ms, 100*ms/17, 170), lastSent: int64(time.Second),
			first: "1.0ms", firstMs: 1, rate: "never", windowMs: 100, perSecond: 200,
		},
		{
			// A full window that ends after the last request was sent does
			// not count: the traffic winds down after it.
			name: "window past the last request", after: every(450*ms, 5*ms, 20), lastSent: 480 * ms,
			first: "450ms", firstMs: 450, rate: "never", windowMs: 100, perSecond: 200,
		},
		{
			name: "no answer after the fault", lastSent: int64(time.Second),
			first: "never", rate: "never", windowMs: 100, perSecond: 200,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := recTrack{first: never}
			steady(&r, &f)
			for _, a := range tt.after {
				r.answer(int64(f.End)+a, &f)
			}
			got := r.figures(&f, int64(f.End)+tt.lastSent)
			if got.FirstAnswer != tt.first || got.Rate != tt.rate || got.WindowMs != tt.windowMs || got.PreFaultPerSecond != tt.perSecond || !got.Ended {
				t.Errorf("got first %q, 90%% %q, window %vms, %v/s before, ended %v; want %q, %q, %vms, %v/s, true",
					got.FirstAnswer, got.Rate, got.WindowMs, got.PreFaultPerSecond, got.Ended, tt.first, tt.rate, tt.windowMs, tt.perSecond)
			}
			if (got.FirstAnswerMs == nil) != (tt.first == "never") || (got.FirstAnswerMs != nil && *got.FirstAnswerMs != tt.firstMs) {
				t.Errorf("first_answer_ms %v, want %v (null for never)", deref(got.FirstAnswerMs), tt.firstMs)
			}
			if (got.RateMs == nil) != (tt.rate == "never") || (got.RateMs != nil && *got.RateMs != tt.rateMs) {
				t.Errorf("rate_90_ms %v, want %v (null for never)", deref(got.RateMs), tt.rateMs)
			}
		})
	}

	t.Run("slow rate widens the window", func(t *testing.T) {
		// 50 answers a second before the fault: 20 answers take 400 ms, so
		// windows of 400 ms that need 18.
		r := recTrack{first: never}
		for at := int64(0); at < int64(f.Start); at += 20 * ms {
			r.answer(at, &f)
		}
		for _, a := range every(410*ms, 20*ms, 40) {
			r.answer(int64(f.End)+a, &f)
		}
		// [400, 800) holds 20 (410..790).
		got := r.figures(&f, int64(f.End)+int64(2*time.Second))
		if got.WindowMs != 400 || got.Rate != "800ms" || got.FirstAnswer != "410ms" {
			t.Errorf("window %vms, 90%% %q, first %q; want 400ms, 800ms, 410ms", got.WindowMs, got.Rate, got.FirstAnswer)
		}
	})
	t.Run("fault from the start", func(t *testing.T) {
		g := Fault{Service: "db", Kind: Hang, End: time.Second}
		r := recTrack{first: never}
		r.answer(int64(time.Second)+7*ms, &g)
		got := r.figures(&g, int64(2*time.Second))
		if got.Rate != "n/a" || got.RateMs != nil || got.FirstAnswer != "7.0ms" {
			t.Errorf("90%% %q (%v), first %q; want n/a with no rate before the fault, first 7ms", got.Rate, deref(got.RateMs), got.FirstAnswer)
		}
	})
	t.Run("fault past the run", func(t *testing.T) {
		r := recTrack{first: never}
		steady(&r, &f)
		got := r.figures(&f, int64(f.End)-1)
		if got.Ended || got.FirstAnswer != "never" || got.Rate != "never" {
			t.Errorf("ended %v, first %q, 90%% %q; want false, never, never", got.Ended, got.FirstAnswer, got.Rate)
		}
	})
}

// every returns n times from start, gap apart.
func every(start, gap int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = start + int64(i)*gap
	}
	return out
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestProbeCrossesHops runs a chain a → b → c → d in the admission
// pattern and checks every admission down the chain: a call made on behalf
// of an attempt its caller's op admitted as a probe, at any hop above, is
// asked as a probe (budget.Ask.Probe); any other is not. With d hung, the
// ops refuse along the chain; with b slow, a's op probes b while b's and
// c's, whose callees are well, admit as usual: the mark must then cross two
// hops on its own.
func TestProbeCrossesHops(t *testing.T) {
	t.Parallel()
	top, err := topology.Parse("chain.yaml", []byte(`entry: a
budget: 200ms
services:
  a:
    calls:
      - to: b
        timeout: 150ms
        fallback: [{local: cache, latency: {p50: 1ms, p99: 2ms}}]
  b:
    latency: {p50: 2ms, p99: 4ms}
    calls: [{to: c, timeout: 120ms}]
  c:
    latency: {p50: 2ms, p99: 4ms}
    calls: [{to: d, timeout: 100ms}]
  d:
    latency: {p50: 5ms, p99: 10ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	var asked [3]int
	for _, f := range []Fault{
		{Service: "d", Kind: Hang, Start: 200 * time.Millisecond, End: 2 * time.Second},
		{Service: "b", Kind: Slow, Latency: 500 * time.Millisecond, Start: 200 * time.Millisecond, End: 2 * time.Second},
	} {
		cfg := Config{Requests: 3000, Concurrency: 10, Seed: 5, Faults: []Fault{f}}.withDefaults()
		m := compile(top, cfg)
		e := newEngine(m, cfg, Admission)
		var steps []step
		e.trace = func(s step) { steps = append(steps, s) }
		e.run()

		// depth[op] is the hop of the op's caller: a is 0, b 1, c 2.
		depth := map[int32]int{}
		for i, o := range m.ops {
			depth[int32(i)] = map[string]int{"a": 0, "b": 1, "c": 2}[m.names[o.caller]]
		}
		// probedAt[req][hop]: the request's latest admission at that hop
		// was a probe. Each hop makes one attempt per request (no
		// retries).
		probedAt := map[int32]*[3]bool{}
		for k, s := range steps {
			if !s.begin {
				continue
			}
			p := probedAt[s.req]
			if p == nil {
				p = new([3]bool)
				probedAt[s.req] = p
			}
			h := depth[s.op]
			if h == 0 {
				*p = [3]bool{} // a new attempt from the top
			}
			want := false
			for _, up := range p[:h] {
				want = want || up
			}
			if s.asked != want {
				t.Fatalf("%s, step %d: request %d at hop %d asked as a probe: %v, want %v (probes above: %v)", f, k, s.req, h, s.asked, want, p[:h])
			}
			p[h] = s.probe && s.admitted
			if s.asked {
				asked[h]++
			}
		}
	}
	t.Logf("admissions asked as probes, by hop: %v", asked)
	if asked[1] == 0 || asked[2] == 0 {
		t.Errorf("admissions asked as probes, by hop: %v; the runs never probed through one hop and through two", asked)
	}
}
