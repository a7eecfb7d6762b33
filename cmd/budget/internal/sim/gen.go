package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Tree returns the YAML of a generated topology of n services (at least 2)
// for benchmarks: an entry calling a few mid-tier services, each calling
// further services down a tree of fan-out 4, where deeper calls are made by
// a share of requests only, so a request touches about a dozen services.
// Latencies, timeouts and retries are drawn from seed; timeouts are 3× the
// callee's p99 and satisfy budget audit's invariant on most calls.
func Tree(n int, seed uint64) []byte {
	n = max(n, 2)
	r := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	fmt.Fprintf(&b, "# A generated tree of %d services (sim.Tree(%d, %d)).\nentry: s0\nbudget: 2s\nservices:\n", n, n, seed)
	const fanout = 4
	for i := range n {
		fmt.Fprintf(&b, "  s%d:\n", i)
		if i > 0 {
			p50 := 1 + r.IntN(20)
			fmt.Fprintf(&b, "    latency: {p50: %dms, p99: %dms}\n", p50, p50*(2+r.IntN(4)))
			if r.IntN(3) == 0 {
				b.WriteString("    cancellable: true\n")
			}
		}
		first := i*fanout + 1
		if first >= n {
			continue
		}
		b.WriteString("    calls:\n")
		for c := first; c < min(first+fanout, n); c++ {
			share := 1.0
			if i > 0 {
				share = 0.5
			} else if c > 2 {
				share = 0.25
			}
			timeout := 100 + r.IntN(200)
			retries := r.IntN(2)
			fmt.Fprintf(&b, "      - {to: s%d, timeout: %dms, retries: %d, backoff: 10ms, share: %g}\n", c, timeout, retries, share)
		}
	}
	return []byte(b.String())
}
