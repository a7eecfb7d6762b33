// Package e2e proves, across real processes, what the budget promises: an
// edge, a service and a backend, three separate programs (cmd/edge,
// cmd/service, cmd/backend) joined over loopback by delaying TCP proxies,
// carry one deadline end to end. The test in this package builds and starts
// them, and checks from what each process reports that the remaining budget
// shrinks at every hop by at least the time spent and the transit, that the
// edge answers within its budget when the backend hangs, that every hop then
// answers (504, 504, DEADLINE_EXCEEDED) while its caller still listens rather
// than being canceled, and that the backend's work stops at the deadline, as
// measured by its orphan-work probe.
//
// cmd/budgetload measures the same failure under load in one process: 100
// and 1,000 concurrent requests through three HTTP hops to a hanging
// backend, with budgets, with one shared deadline and with careful per-hop
// timeouts in the same run. cmd/failload measures what each failure costs:
// client → edge → backend with a hanging backend, httpbudget beside plain Go
// at 1,000 concurrent requests and more, with overshoot, CPU and allocations
// per failure and the connections dialled, as a table and a JSON report.
//
// The module also holds the Connect interoperability tests: connect-go
// clients and handlers against httpbudget's middleware and transport.
package e2e
