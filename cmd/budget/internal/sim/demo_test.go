package sim_test

import (
	"bufio"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/timebudget/budget/cmd/budget/internal/sim"
)

// demoRow is one pattern's row of budget demo's geo table.
type demoRow struct {
	p50, p99          float64 // ms
	in, late, failed  float64 // shares
	wasteS            float64
	exactRefused      int64
	simplifiedRefused int64
}

// demoLine matches a row of the demo's table: pattern, in budget, late,
// failed, what a failure took, wasted work, p50, p99, max.
var demoLine = regexp.MustCompile(`^  (per-call timeouts|shared deadline|deadline \+ admission|no timeout)\s+(\d+)%\s+(\d+)%\s+(\d+)%\s+(—|cut off|\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$`)

// demoNotes matches the first line of a pattern's notes under the table
// ("  deadline + admission: answered by cache 120; refused before starting:
// …"), which may go on over indented lines.
var demoNotes = regexp.MustCompile(`^  (per-call timeouts|shared deadline|deadline \+ admission|no timeout): (.*)$`)

// readDemo reads the geo table of the demo's recorded output,
// cmd/budget/testdata/demo-output.txt (a default run: 120 requests, 20 at a
// time, faults geometry=hang), and the refusals noted under it.
func readDemo(t *testing.T) map[string]demoRow {
	t.Helper()
	f, err := os.Open("../../testdata/demo-output.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]demoRow{}
	notes := map[string]string{}
	inGeo, last := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "geo:") {
			inGeo = true
		} else if strings.HasPrefix(line, "checkout:") {
			break
		}
		if !inGeo {
			continue
		}
		if m := demoLine.FindStringSubmatch(line); m != nil {
			rows[m[1]] = demoRow{in: share(t, m[2]), late: share(t, m[3]), failed: share(t, m[4]),
				wasteS: dur(t, m[6]) / 1000, p50: dur(t, m[7]), p99: dur(t, m[8])}
			continue
		}
		if m := demoNotes.FindStringSubmatch(line); m != nil {
			last = m[1]
			notes[last] = m[2]
		} else if last != "" && strings.HasPrefix(line, "      ") {
			notes[last] += " " + strings.TrimSpace(line)
		} else {
			last = ""
		}
	}
	for name, r := range rows {
		if x := regexp.MustCompile(`geometry\.exact (\d+)`).FindStringSubmatch(notes[name]); x != nil {
			r.exactRefused, _ = strconv.ParseInt(x[1], 10, 64)
		}
		if x := regexp.MustCompile(`geometry\.simplified (\d+)`).FindStringSubmatch(notes[name]); x != nil {
			r.simplifiedRefused, _ = strconv.ParseInt(x[1], 10, 64)
		}
		rows[name] = r
	}
	if len(rows) != 4 {
		t.Fatalf("read %d rows of the demo's geo table, want 4", len(rows))
	}
	if r := rows["deadline + admission"]; r.exactRefused == 0 || r.simplifiedRefused == 0 {
		t.Fatalf("no refusals read from the demo's admission row: %+v", r)
	}
	return rows
}

// dur parses the demo's durations (446ms, 7.0ms, 295s) into milliseconds.
func dur(t *testing.T, s string) float64 {
	t.Helper()
	scale := 1.0
	switch {
	case strings.HasSuffix(s, "ms"):
		s = strings.TrimSuffix(s, "ms")
	case strings.HasSuffix(s, "s"):
		s, scale = strings.TrimSuffix(s, "s"), 1000
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return v * scale
}

func share(t *testing.T, s string) float64 {
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return float64(v) / 100
}

// TestAgreesWithDemo simulates the demo's geo scenario (testdata/geo.yaml)
// with the demo's default traffic and fault and compares every figure with
// the demo's recorded measurements. The demo takes about 30 s, so the test
// reads its recorded output rather than running it.
//
// Tolerances: the shared deadline's split between answered in budget and
// failed is the exception (see below); latency within 10 ms + 5 % (p50) and
// 15 ms + 10 % (p99), the
// demo's real HTTP and gRPC hops costing a few milliseconds each that the
// topology does not model; shares within 5 points; wasted work within 15 %
// where the demo measured seconds of it, and under a second where it
// measured milliseconds; attempts refused by admission within 10.
func TestAgreesWithDemo(t *testing.T) {
	t.Parallel()
	demo := readDemo(t)
	top := load(t, "testdata/geo.yaml")
	res, err := sim.Run(top, sim.Config{Requests: 120, Concurrency: 20, Seed: 1,
		Faults: []sim.Fault{{Service: "geometry", Kind: sim.Hang}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]sim.Result{}
	for _, r := range res {
		got[r.Name] = r
		d := demo[r.Name]
		near(t, r.Name+" p50", r.LatencyMs.P50, d.p50, 10+0.05*d.p50)
		near(t, r.Name+" p99", r.LatencyMs.P99, d.p99, 15+0.10*d.p99)
		if r.Pattern == "shared" {
			// Each hop of the demo gives up a little before its caller to
			// answer in time (the answer margin), so the edge sometimes has
			// the millisecond its cache needs: from 0 to about 40 % of the
			// demo's shared-deadline requests answer in budget from run to
			// run. The simulation models no margin and answers none: it must
			// not be more optimistic than the demo, and what neither answers
			// in budget fails in both.
			if r.InBudget > d.in+0.05 || d.in > 0.5 {
				t.Errorf("shared deadline in budget: simulated %.2f, demo measured %.2f", r.InBudget, d.in)
			}
			near(t, r.Name+" late", r.Late, d.late, 0.05)
			near(t, r.Name+" in budget or failed", r.InBudget+r.Failed, d.in+d.failed, 0.05)
		} else {
			near(t, r.Name+" in budget", r.InBudget, d.in, 0.05)
			near(t, r.Name+" late", r.Late, d.late, 0.05)
			near(t, r.Name+" failed", r.Failed, d.failed, 0.05)
		}
		if d.wasteS >= 1 {
			near(t, r.Name+" wasted work (s)", r.WastedWorkSeconds, d.wasteS, 0.15*d.wasteS)
		} else if r.WastedWorkSeconds >= 1 {
			t.Errorf("%s: wasted work %.1fs, the demo measured %.3fs", r.Name, r.WastedWorkSeconds, d.wasteS)
		}
		if r.Pattern == "admission" {
			near(t, "refused geometry", float64(r.RefusedBeforeStarting["geometry"]), float64(d.exactRefused), 10)
			near(t, "refused simplified", float64(r.RefusedBeforeStarting["simplified"]), float64(d.simplifiedRefused), 10)
		}
	}
	// The orderings the demo shows.
	pc, sh, ad, no := got["per-call timeouts"], got["shared deadline"], got["deadline + admission"], got["no timeout"]
	if !(ad.LatencyMs.P50 < sh.LatencyMs.P50 && sh.LatencyMs.P50 < pc.LatencyMs.P50 && pc.LatencyMs.P50 < no.LatencyMs.P50) {
		t.Errorf("p50 order: admission %.0f, shared %.0f, per-call %.0f, none %.0f", ad.LatencyMs.P50, sh.LatencyMs.P50, pc.LatencyMs.P50, no.LatencyMs.P50)
	}
	for _, r := range []sim.Result{pc, sh, no} {
		if ad.InBudget <= r.InBudget {
			t.Errorf("admission answers %.2f in budget, %s %.2f", ad.InBudget, r.Name, r.InBudget)
		}
		if r.Pattern != "shared" && r.WastedWorkSeconds < 100*(sh.WastedWorkSeconds+ad.WastedWorkSeconds+0.01) {
			t.Errorf("%s wastes %.1fs, not far more than the deadline patterns", r.Name, r.WastedWorkSeconds)
		}
	}
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s: simulated %.3g, demo measured %.3g (tolerance %.3g)", what, got, want, tol)
	}
}
