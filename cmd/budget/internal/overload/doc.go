// Package overload runs the demo's overload case: a dependency slows under a
// service of a fixed number of workers, and the goodput of the requests that
// never touch it is measured with a budget, with careful per-call timeouts,
// with failsafe-go and with no timeout at all.
package overload
