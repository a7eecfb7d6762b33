// Package dependency holds the demo's dependencies: a service of a typical
// latency that a fault can slow, hang or fail, and that measures the work it
// goes on doing after its caller has gone; the HTTP and gRPC servers that
// serve it, with the budget adapters or without; and the hops that call it.
package dependency
