// Package topologytest generates topology files that once took a
// consumer minutes, gigabytes or an overflow, for the tests of the parser
// and of the commands that read it. They are generated rather than
// committed: the largest is megabytes.
package topologytest

import (
	"fmt"
	"strings"
)

// AliasBomb returns a file of about 60 KB in which one list of 10,000
// calls is named by an alias from each of services services: 1,000
// services make 10 million calls once the aliases are expanded.
func AliasBomb(services int) []byte {
	var b strings.Builder
	b.WriteString("entry: s0\nbudget: 1s\nservices:\n  db: {}\n  s0: {calls: &c [&k {to: db, timeout: 1ms}")
	repeatAlias(&b, "k", 9_999)
	b.WriteString("]}\n")
	for i := 1; i < services; i++ {
		fmt.Fprintf(&b, "  s%d: {calls: *c}\n", i)
	}
	return []byte(b.String())
}

// ReversedChain returns a chain of n services, s0 (the entry) calling s1
// calling s2 and so on, declared from the last to the first, each call's
// timeout 10 ms below its caller's, so that an audit finds nothing.
func ReversedChain(n int) []byte {
	var b strings.Builder
	b.Grow(n * 64)
	b.WriteString("entry: s0\nbudget: 1h\nservices:\n")
	fmt.Fprintf(&b, "  s%d: {}\n", n-1)
	for i := n - 2; i >= 0; i-- {
		fmt.Fprintf(&b, "  s%d: {calls: [{to: s%d, timeout: %dms}]}\n", i, i+1, 3_600_000-10*(i+1))
	}
	return []byte(b.String())
}

// Fanout returns a file of about 10 KB: the entry calls mid fanout times,
// and mid calls db fanout times, so that one request makes fanout²+fanout
// calls. The services take no time of their own, so a simulation makes
// every call: no timeout or give-up cuts a request short.
func Fanout(fanout int) []byte {
	var b strings.Builder
	b.WriteString("entry: edge\nbudget: 1s\nservices:\n  edge: {calls: [&m {to: mid, timeout: 900ms}")
	repeatAlias(&b, "m", fanout-1)
	b.WriteString("]}\n  mid: {calls: [&d {to: db, timeout: 800ms}")
	repeatAlias(&b, "d", fanout-1)
	b.WriteString("]}\n  db: {}\n")
	return []byte(b.String())
}

// LongSequence returns a file of about 40 KB with one service making
// 10,000 calls of an hour, each retried 100 times after an hour's backoff:
// 201 hours each, 229 years one after another, more than MaxSum.
func LongSequence() []byte {
	var b strings.Builder
	b.WriteString("entry: edge\nbudget: 1h\nservices:\n  db: {}\n  edge: {calls: [&k {to: db, timeout: 1h, retries: 100, backoff: 1h}")
	repeatAlias(&b, "k", 9_999)
	b.WriteString("]}\n")
	return []byte(b.String())
}

// Overflow returns a file of about 40 KB whose entry's calls, one after
// another, take 10,000 × 261 hours in the worst case, more than int64
// nanoseconds hold (about 2.56 million hours): LongSequence's calls with 60
// fallbacks of an hour each.
func Overflow() []byte {
	var b strings.Builder
	b.WriteString("entry: edge\nbudget: 1h\nservices:\n  db: {}\n  edge: {calls: [&k {to: db, timeout: 1h, retries: 100, backoff: 1h, fallback: [&f {to: db, timeout: 1h}")
	repeatAlias(&b, "f", 59)
	b.WriteString("]}")
	repeatAlias(&b, "k", 9_999)
	b.WriteString("]}\n")
	return []byte(b.String())
}

// DeepTail returns levels services each calling the next twice, each with
// a p99 of an hour: the last's p99 counts 2^levels times in the entry's.
func DeepTail(levels int) []byte {
	var b strings.Builder
	b.WriteString("entry: l0\nbudget: 1h\nservices:\n")
	for i := range levels {
		fmt.Fprintf(&b, "  l%d: {latency: {p50: 1h, p99: 1h}, calls: [{to: l%d, timeout: 1h}, {to: l%d, timeout: 1h}]}\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "  l%d: {latency: {p50: 1h, p99: 1h}}\n", levels)
	return []byte(b.String())
}

// Named returns a small valid file whose callee is named name.
func Named(name string) []byte {
	return []byte(fmt.Sprintf("entry: edge\nbudget: 1s\nservices:\n  edge: {calls: [{to: %q, timeout: 500ms}]}\n  %q: {}\n", name, name))
}

// repeatAlias writes n more references to the YAML anchor name, each after a
// comma, as the next items of a flow sequence.
func repeatAlias(b *strings.Builder, name string, n int) {
	for range n {
		b.WriteString(", *" + name)
	}
}
