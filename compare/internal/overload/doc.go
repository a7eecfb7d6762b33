// Package overload runs the overload head to head that
// compare/cmd/overload prints: one service graph, several ways of protecting
// it, the same open-loop traffic for each.
//
// The graph is three hops over loopback HTTP/1.1. An edge and a middle hop run
// in the harness's own process; the backend, where the bottleneck is, runs in
// a child process (the harness's own binary, started again in the backend
// role by [ServeBackendIfChild]) limited to a few processors with GOMAXPROCS.
// Each request costs the backend a fixed amount of real CPU (rounds of
// SHA-256, calibrated once per run), done in units of a quarter millisecond
// between which the work checks its context, as careful code does. Because
// the CPU is burnt in a process of its own, shedders that read the CPU use of
// their process's cgroup, as go-zero's and Kratos' do, see it. Where cgroup
// v1's CPU accounting hierarchy is writable, the harness puts its own
// process and each backend in an accounting group of its own, so that each
// hop's shedder reads its own process's CPU, as in a container of its own,
// rather than the whole machine's (see the report's "CPU accounting" line).
//
// Every variant at a load is offered the same arrivals and classes (the
// generator is reseeded from the load alone), so that differences between
// variants are not the luck of the draw.
//
// A run goes through its workloads in turn (see [Workloads]): uniform (every
// request with the same budget, 300 ms, and the same work, 4 ms), mixed
// (each request's budget and work drawn from value:share mixes, by default
// 100 ms / 500 ms / 3 s and 1 ms / 20 ms) and fan-out (the uniform requests,
// but the edge needs the answers of three backend calls made at once). For
// each workload it measures the graph's capacity first (closed loop through
// the unprotected graph, on the workload's work), then offers each variant
// Poisson arrivals at multiples of that capacity. Requests are 20 %
// critical, 50 % default and 30 % sheddable; the edge tells the class from
// the route, as an edge policy would, and each request's user waits its
// budget and no longer. Each variant gets a fresh graph for each load, runs
// a warm-up that is not counted, then the measured interval.
//
// The variants: no protection; careful per-call timeouts; failsafe-go's
// bulkhead and breaker (kept as a reference), its adaptive concurrency
// limiter with queueing, and its priority limiter with the classes mapped
// to its priorities; go-zero's adaptive shedder; Kratos' BBR limiter; and
// budget, untuned (only the edge's policy and the classifier are set; its
// Op and Queue keep every sizing field at its default). Each prints its
// settings beside its figures.
//
// What is counted, per workload, variant and load: goodput (answers within
// their budget), the 99th percentile latency of those answers, the share of
// requests whose work the backend started that were not answered in budget,
// the share of each class and of each budget group answered in budget, and
// the backend work spent on requests not answered in budget (its share of
// all the units of work run, and the CPU seconds that apportions).
// The backend records every request it saw, with the class it saw, so a run
// can show that classes crossed both hops.
//
// Timing on a shared machine moves between runs; compare variants within one
// run, where they share the capacity measured beside them.
package overload
