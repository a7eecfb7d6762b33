package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Tree returns the YAML of a generated topology of n services (at least 2)
// for benchmarks: a tree of fan-out 4 under the entry s0, where the entry
// makes two calls for every request and two for a quarter of them, and
// deeper calls are made by half the requests, so a request touches about a
// dozen services. Latencies and retries are drawn from seed. Each timeout is
// 3× its callee's typical tail (its own p99 plus its callees', weighted by
// the share of requests that call them), as a small multiple of p99 advises, and the budget
// is 1.2× the sum of the entry's timeouts, so a request has time for one
// attempt of each call but not for every retry.
func Tree(n int, seed uint64) []byte {
	n = max(n, 2)
	r := rand.New(rand.NewPCG(seed, 7))
	const fanout = 4
	p50 := make([]int, n)
	p99 := make([]int, n)
	cancellable := make([]bool, n)
	retries := make([]int, n)
	for i := 1; i < n; i++ {
		p50[i] = 1 + r.IntN(20)
		p99[i] = p50[i] * (2 + r.IntN(4))
		cancellable[i] = r.IntN(3) == 0
		retries[i] = r.IntN(2)
	}
	children := func(i int) []int {
		var c []int
		for k := i*fanout + 1; k < min(i*fanout+fanout+1, n); k++ {
			c = append(c, k)
		}
		return c
	}
	// tail[i] is i's p99 plus half its callees' tails (below the entry,
	// each call is made by half the requests). Children have larger
	// indexes, so one backward pass computes it.
	const backoff = 10
	tail := make([]int, n)
	timeout := func(k int) int { return 3 * tail[k] }
	for i := n - 1; i >= 1; i-- {
		tail[i] = p99[i]
		for _, k := range children(i) {
			tail[i] += tail[k] / 2
		}
	}
	sum := 0
	for _, k := range children(0) {
		sum += timeout(k)
	}
	budget := time.Duration(sum*6/5) * time.Millisecond
	var b strings.Builder
	fmt.Fprintf(&b, "# A generated tree of %d services (sim.Tree(%d, %d)).\nentry: s0\nbudget: %s\nservices:\n", n, n, seed, budget)
	for i := range n {
		fmt.Fprintf(&b, "  s%d:\n", i)
		if i > 0 {
			fmt.Fprintf(&b, "    latency: {p50: %dms, p99: %dms}\n", p50[i], p99[i])
			if cancellable[i] {
				b.WriteString("    cancellable: true\n")
			}
		}
		ch := children(i)
		if len(ch) == 0 {
			continue
		}
		b.WriteString("    calls:\n")
		for j, k := range ch {
			share := 0.5
			if i == 0 {
				share = 1
				if j >= 2 {
					share = 0.25
				}
			}
			fmt.Fprintf(&b, "      - {to: s%d, timeout: %dms, retries: %d, backoff: %dms, share: %g}\n", k, timeout(k), retries[k], backoff, share)
		}
	}
	return []byte(b.String())
}
