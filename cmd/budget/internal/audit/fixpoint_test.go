package audit_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/audit"
	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// apply sets every suggested timeout of rep on the call or fallback call
// at the finding's position, and returns how many it set.
func apply(t *testing.T, top *topology.Topology, rep *audit.Report) int {
	t.Helper()
	at := map[topology.Pos]time.Duration{}
	for _, f := range rep.Findings {
		if f.SuggestedTimeoutMs == 0 {
			continue
		}
		pos := topology.Pos{Line: f.Line, Col: f.Col}
		if _, dup := at[pos]; dup {
			t.Fatalf("two suggestions for the call at %d:%d: %v", f.Line, f.Col, rep.Findings)
		}
		at[pos] = time.Duration(f.SuggestedTimeoutMs) * time.Millisecond
	}
	n := 0
	for _, name := range top.Names {
		calls := top.Services[name].Calls
		for i := range calls {
			if d, ok := at[calls[i].Pos]; ok {
				calls[i].Timeout, n = d, n+1
			}
			for j := range calls[i].Fallback {
				if d, ok := at[calls[i].Fallback[j].Pos]; ok {
					calls[i].Fallback[j].Timeout, n = d, n+1
				}
			}
		}
	}
	if n != len(at) {
		t.Fatalf("%d suggestions, %d calls at their positions", len(at), n)
	}
	return n
}

// key identifies a finding across two audits: the timeouts in its
// message may change when the suggestions are applied.
type key struct {
	caller, callee string
	kind           audit.Kind
	line, col      int
}

func keyOf(f audit.Finding) key { return key{f.Caller, f.Callee, f.Kind, f.Line, f.Col} }

// checkFixedPoint audits top, applies every suggestion, and audits again:
// the second report must suggest nothing and hold no finding the first did
// not. It returns the two reports.
func checkFixedPoint(t *testing.T, src string, top *topology.Topology) (first, second *audit.Report) {
	t.Helper()
	first = audit.Check(top)
	seen := map[key]bool{}
	perCall := map[topology.Pos]int{}
	for _, f := range first.Findings {
		seen[keyOf(f)] = true
		if f.Kind != audit.Cycle {
			if perCall[topology.Pos{Line: f.Line, Col: f.Col}]++; perCall[topology.Pos{Line: f.Line, Col: f.Col}] > 1 {
				t.Fatalf("two findings for the call at %d:%d:\n%s\n%v", f.Line, f.Col, src, first.Findings)
			}
		}
		if f.SuggestedTimeoutMs == 0 && f.Kind != audit.Conflict && f.Kind != audit.Cycle {
			t.Errorf("a %s finding without a suggested timeout: %v\n%s", f.Kind, f, src)
		}
		if f.SuggestedTimeoutMs != 0 && time.Duration(f.SuggestedTimeoutMs)*time.Millisecond > topology.MaxDuration {
			t.Errorf("suggested %dms, more than a file may declare: %v", f.SuggestedTimeoutMs, f)
		}
	}
	apply(t, top, first)
	second = audit.Check(top)
	for _, f := range second.Findings {
		if f.SuggestedTimeoutMs != 0 {
			t.Fatalf("after applying every suggestion, another: %v\nfirst:\n%v\nfile:\n%s", f, first.Findings, src)
		}
		if !seen[keyOf(f)] {
			t.Fatalf("after applying every suggestion, a new finding: %v\nfirst:\n%v\nfile:\n%s", f, first.Findings, src)
		}
	}
	return first, second
}

// randomTopology writes a random topology file: a chain, a fan-out, a
// service calling several in sequence, or a random graph of shared
// callees, with retries, backoff, fallbacks (calls and local), calls
// without a timeout, services without latency, the odd timeout in
// fractions of a millisecond and the odd cycle.
func randomTopology(rng *rand.Rand) string {
	n := 2 + rng.IntN(9)
	dur := func(lo, hi int) string { // milliseconds
		d := lo + rng.IntN(hi-lo+1)
		if rng.IntN(10) == 0 {
			return fmt.Sprintf("%d.5ms", d)
		}
		return fmt.Sprintf("%dms", d)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "entry: s0\nbudget: %s\nservices:\n", dur(50, 5000))
	shape := rng.IntN(4)
	for i := range n {
		fmt.Fprintf(&b, "  s%d:\n", i)
		if rng.IntN(6) != 0 {
			p99 := 1 + rng.IntN(400)
			fmt.Fprintf(&b, "    latency: {p50: %dms, p99: %dms}\n", 1+rng.IntN(p99), p99)
		}
		var callees []int
		switch shape {
		case 0: // a chain
			if i+1 < n {
				callees = []int{i + 1}
			}
		case 1: // a fan-out from the entry
			if i == 0 {
				for k := 1; k < n; k++ {
					callees = append(callees, k)
				}
			}
		case 2: // a sequence of calls, some to the same callee, then a chain
			if i == 0 {
				for range 1 + rng.IntN(5) {
					callees = append(callees, 1+rng.IntN(n-1))
				}
			} else if i+1 < n && rng.IntN(2) == 0 {
				callees = []int{i + 1}
			}
		default: // a random graph of shared callees
			for k := i + 1; k < n; k++ {
				if rng.IntN(3) == 0 {
					callees = append(callees, k)
				}
			}
		}
		if rng.IntN(25) == 0 {
			callees = append(callees, rng.IntN(i+1)) // a cycle
		}
		if len(callees) == 0 {
			continue
		}
		b.WriteString("    calls:\n")
		for _, k := range callees {
			fmt.Fprintf(&b, "      - to: s%d\n", k)
			if rng.IntN(8) != 0 {
				fmt.Fprintf(&b, "        timeout: %s\n", dur(1, 3000))
			}
			if rng.IntN(3) == 0 {
				fmt.Fprintf(&b, "        retries: %d\n", 1+rng.IntN(3))
				if rng.IntN(2) == 0 {
					fmt.Fprintf(&b, "        backoff: %s\n", dur(1, 100))
				}
			}
			if rng.IntN(5) == 0 {
				b.WriteString("        fallback:\n")
				if k+1 < n && rng.IntN(2) == 0 {
					fmt.Fprintf(&b, "          - {to: s%d", k+1+rng.IntN(n-k-1))
					if rng.IntN(4) != 0 {
						fmt.Fprintf(&b, ", timeout: %s", dur(1, 1000))
					}
					b.WriteString("}\n")
				}
				if rng.IntN(2) == 0 {
					fmt.Fprintf(&b, "          - {local: cache, latency: {p50: 1ms, p99: %s}}\n", dur(1, 10))
				}
				if !strings.HasSuffix(b.String(), "}\n") {
					b.WriteString("          - {local: cache, latency: {p50: 1ms, p99: 2ms}}\n")
				}
			}
		}
	}
	return b.String()
}

// TestFixedPoint audits 500 random topologies, applies every suggestion and
// audits again: nothing more may be suggested and nothing new found, in one
// round. Each audit is deterministic, and a topology left without findings
// is checked against the rules directly (satisfied).
func TestFixedPoint(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 14))
	const runs = 500
	var suggested, clean, conflicts int
	for i := range runs {
		src := randomTopology(rng)
		top, err := topology.Parse("random.yaml", []byte(src))
		if err != nil {
			t.Fatalf("topology %d: %v\n%s", i, err, src)
		}
		again, _ := topology.Parse("random.yaml", []byte(src))
		if a, b := audit.Check(top), audit.Check(again); !reflect.DeepEqual(a, b) {
			t.Fatalf("topology %d: two audits differ:\n%v\n%v", i, a.Findings, b.Findings)
		}
		first, second := checkFixedPoint(t, src, top)
		for _, f := range first.Findings {
			if f.SuggestedTimeoutMs != 0 {
				suggested++
			}
		}
		for _, f := range second.Findings {
			if f.Kind == audit.Conflict {
				conflicts++
			}
		}
		if len(second.Findings) == 0 {
			clean++
			satisfied(t, src, top)
		}
	}
	t.Logf("%d topologies, %d suggestions applied, %d clean after one round, %d conflicts left", runs, suggested, clean, conflicts)
	if clean < runs/4 || suggested < runs {
		t.Errorf("the generator is too narrow: %d clean, %d suggestions", clean, suggested)
	}
}

// satisfied checks an acyclic topology against the rules without the
// audit's code: every call reached has a timeout at least its callee's p99
// with its callees', and each service's calls one after another, in the
// worst case, take less than the smallest timeout of the calls into it
// (the budget for the entry).
func satisfied(t *testing.T, src string, top *topology.Topology) {
	t.Helper()
	given := map[string]time.Duration{top.Entry: top.Budget}
	for changed := true; changed; {
		changed = false
		for _, name := range top.Names {
			if _, ok := given[name]; !ok {
				continue
			}
			for _, c := range top.Services[name].Calls {
				for _, to := range []struct {
					name    string
					timeout time.Duration
				}{{c.To, c.Timeout}} {
					if old, ok := given[to.name]; !ok || to.timeout < old {
						given[to.name], changed = to.timeout, true
					}
				}
				for _, f := range c.Fallback {
					if f.To == "" {
						continue
					}
					if old, ok := given[f.To]; !ok || f.Timeout < old {
						given[f.To], changed = f.Timeout, true
					}
				}
			}
		}
	}
	var tail func(string) time.Duration
	tail = func(name string) time.Duration {
		s := top.Services[name]
		d := s.Latency.P99
		for _, c := range s.Calls {
			d += tail(c.To)
		}
		return d
	}
	for name, g := range given {
		var sum time.Duration
		for _, c := range top.Services[name].Calls {
			if c.Timeout == 0 {
				t.Fatalf("%s -> %s has no timeout in a clean report:\n%s", name, c.To, src)
			}
			if c.Timeout < tail(c.To) {
				t.Fatalf("%s -> %s: %v below the p99 %v in a clean report:\n%s", name, c.To, c.Timeout, tail(c.To), src)
			}
			for _, f := range c.Fallback {
				if f.To != "" && (f.Timeout == 0 || f.Timeout < tail(f.To)) {
					t.Fatalf("%s -> %s: fallback timeout %v in a clean report:\n%s", name, f.To, f.Timeout, src)
				}
			}
			sum += topology.WorstCall(c, g)
		}
		if sum >= g {
			t.Fatalf("the calls of %s take %v, given %v, in a clean report:\n%s", name, sum, g, src)
		}
	}
}

// TestShopInOneRound is built after the shop whose audits, applied round
// after round, moved cart -> stock from 474ms to 253ms to 144ms and then
// suggested two values for it at once. cart is given 800ms and calls stock
// (p99 150ms) and pricing (p99 470ms) one after the other, with timeouts
// 300ms and 940ms: both calls must be reported in the first audit, once
// each, and applying the suggestions must leave nothing to report. The old
// audit reported pricing alone, then suggested for it 799ms, 580ms, 526ms,
// 508ms, 502ms and 500ms in six rounds, never stock.
func TestShopInOneRound(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "shop.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	top, err := topology.Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	first, second := checkFixedPoint(t, string(data), top)
	callees := map[string]bool{}
	for _, f := range first.Findings {
		if f.Caller == "cart" {
			callees[f.Callee] = true
		}
	}
	if !callees["stock"] || !callees["pricing"] || len(first.Findings) != 2 {
		t.Errorf("want one finding on each of cart's calls, got:\n%v", first.Findings)
	}
	if len(second.Findings) != 0 {
		t.Errorf("after the suggestions:\n%v", second.Findings)
	}
	calls := top.Services["cart"].Calls
	if sum := calls[0].Timeout + calls[1].Timeout; sum >= 800*time.Millisecond ||
		calls[0].Timeout < 150*time.Millisecond || calls[1].Timeout < 470*time.Millisecond {
		t.Errorf("cart's calls now %v and %v", calls[0].Timeout, calls[1].Timeout)
	}
}
