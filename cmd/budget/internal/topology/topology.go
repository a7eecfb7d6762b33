// Package topology reads a service call graph declared in YAML: which service
// a request enters at, the time a user waits for it, and for each service its
// latency and the calls it makes to other services, with their timeouts,
// retries, backoff and fallbacks. The audit and sim subcommands of the budget
// command both start from a Topology.
//
// The format:
//
//	entry: edge
//	budget: 3s            # what the user waits at the entry
//	services:
//	  edge:
//	    calls:
//	      - {to: search, timeout: 2s, retries: 1, backoff: 100ms}
//	      - {to: ads, timeout: budget}  # no timeout of its own: the rest of the budget
//	  search:
//	    latency: {p50: 20ms, p99: 200ms}
//	    workers: 200          # optional: concurrent requests it can serve
//	    cancellable: true     # optional: its work stops when its caller leaves
//	    calls:
//	      - to: db
//	        timeout: 1.5s
//	        retries: 2
//	        backoff: 50ms
//	        share: 0.5        # optional: the fraction of requests that make it
//	        fallback:         # optional: tried in order when the call fails
//	          - {to: replica, timeout: 300ms}
//	          - {local: cache, latency: {p50: 1ms, p99: 2ms}}
//	  db:
//	    latency: {p50: 5ms, p99: 80ms}
//	  replica:
//	    host: db              # optional: runs on db's servers and shares its faults
//	  ads:
//	    latency: {p50: 10ms, p99: 40ms}
//
// Parse reports the first problem it finds as an *Error that names the file,
// line and column.
//
// The input may be hostile, so what it can cost is bounded by construction.
// ReadFile reads regular files only (not a directory, /dev/zero or a FIFO)
// of at most MaxFileSize (16 MiB), through a limit rather than by size
// alone. A file holds one YAML document, of at most MaxNodes (5,000,000)
// nodes with every alias counted as a copy of what it names, counted before
// anything is decoded, so an alias bomb is refused in linear time. It
// declares at most MaxServices (100,000) services, MaxCalls (10,000) calls
// per service, MaxFallbacks (100) per call and MaxTotalCalls (1,000,000)
// calls in all, fallbacks counted. Durations are at most MaxDuration (an
// hour), and a service's calls one after another in the worst case, or its
// p99 with its callees', add up to at most MaxSum (about 50 years), so no
// sum a consumer makes overflows. Names may not contain spaces, control
// characters (C0 or C1) or bidirectional formatting characters (U+061C,
// U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), which could make output
// printed to a terminal show something else. Within those bounds Parse's
// time and memory are linear in the file's size: the largest chain
// allowed, 100,000 services in 5.4 MB, takes about 1.4 s and 300 MB
// allocated. The constant is the YAML library's, which builds every node
// as written before any bound on nodes can be checked: a 16 MiB file of
// the smallest nodes (a flat list of 8 million) costs about 1.6 GB and 12 s
// before it is refused.
package topology

import (
	"fmt"
	"time"
)

// Topology is a parsed and validated call graph. Services are reachable by
// name; Names keeps the order in which the file declared them, so output
// derived from a Topology is deterministic.
type Topology struct {
	// Entry is the service a request enters at.
	Entry string
	// Budget is how long a user waits for an answer at the entry.
	Budget time.Duration
	// Services maps every declared service's name to its description.
	Services map[string]*Service
	// Names lists the services in the order the file declared them.
	Names []string
}

// Latency is a service's own processing time, as two quantiles. The zero
// value means the file declared none: the service takes no time of its own.
type Latency struct {
	// P50 is the median.
	P50 time.Duration
	// P99 is the 99th percentile; it is at least P50.
	P99 time.Duration
}

// IsZero reports whether no latency was declared.
func (l Latency) IsZero() bool { return l.P50 == 0 && l.P99 == 0 }

// Service is one node of the call graph.
type Service struct {
	// Name is the key the service is declared under.
	Name string
	// Latency is the service's own processing time per request, on top of
	// the calls it makes.
	Latency Latency
	// Calls are made one after another, in this order, for every request.
	Calls []Call
	// Workers is how many requests the service serves at a time; 0 means
	// the file did not say and a consumer picks its default.
	Workers int
	// Host names another service whose servers this one runs on (another
	// endpoint of the same process): faults injected into the host apply
	// here too, and the two share the host's workers. Empty for none.
	Host string
	// Cancellable says the service's work stops as soon as its caller gives
	// up (it runs in the request's context). When false the work goes on
	// until it finishes or until a deadline handed over with the request
	// passes, as in a worker pool or a database without statement_timeout.
	Cancellable bool
	// Pos is where the service is declared.
	Pos Pos
}

// Call is one call a service makes to another.
type Call struct {
	// To names the callee.
	To string
	// Timeout bounds each attempt; 0 means the file set none.
	Timeout time.Duration
	// Budget says the call spends the rest of its caller's budget: it has
	// no timeout of its own (Timeout is 0) and runs under the deadline
	// the caller was given, as a call through a budget.Op does. The file
	// writes it as "timeout: budget".
	Budget bool
	// Retries is how many times a failed attempt is repeated (0 or more).
	Retries int
	// Backoff is the pause before each retry.
	Backoff time.Duration
	// Share is the fraction of the caller's requests that make this call,
	// in (0, 1]; 1 when the file does not say. A simulation draws it per
	// request; the audit assumes every call is made.
	Share float64
	// Fallback lists what is tried, in order, when every attempt failed.
	Fallback []Fallback
	// Pos is where the call is declared.
	Pos Pos
}

// Fallback is one rung tried after a call failed: a call to another service
// (To set) or a local answer such as a cache (Local set) with its latency.
type Fallback struct {
	// To names the service the fallback calls; empty for a local rung.
	To string
	// Timeout bounds the fallback call; 0 means none. Unused for a local rung.
	Timeout time.Duration
	// Local names a local rung, such as "cache"; empty for a call.
	Local string
	// Latency is a local rung's time to answer.
	Latency Latency
	// Pos is where the fallback is declared.
	Pos Pos
}

// Name returns the callee's name or the local rung's.
func (f Fallback) Name() string {
	if f.To != "" {
		return f.To
	}
	return f.Local
}

// Pos is a position in the YAML file, 1-based.
type Pos struct {
	Line, Col int
}

// Error is a problem in a topology file, at a position.
type Error struct {
	// File is the name the file was parsed under.
	File string
	// Pos is where the problem is; Line and Col are at least 1.
	Pos Pos
	// Msg says what is wrong.
	Msg string
}

// Error renders the problem as FILE:LINE:COL: message, the form editors and
// CI logs link to the position.
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Col, e.Msg)
}

// HostOf returns the service whose servers name runs on: its Host, or name
// itself.
func (t *Topology) HostOf(name string) string {
	if s, ok := t.Services[name]; ok && s.Host != "" {
		return s.Host
	}
	return name
}

// Callees returns the services a call reaches: its callee and the callees
// of its fallbacks that are calls, in order.
func (c Call) Callees() []string {
	out := []string{c.To}
	for _, f := range c.Fallback {
		if f.To != "" {
			out = append(out, f.To)
		}
	}
	return out
}
