// Package demo runs "budget demo": it parses the demo's flags, starts each
// scenario's dependencies and edge on loopback for every pattern in turn,
// drives the same load through them, runs the overload case, and turns what
// was measured into a report.Report. It serves the run's live /debug/budget
// page while it runs.
//
// The pieces it wires together live in their own packages: the declared
// scenarios and faults (scenario), the services (dependency, loopback,
// postgres), the ways of spending time (pattern), the load generator (load),
// the overload case (overload) and the rendering (report).
package demo
