// Package pattern holds the four ways the demo spends a request's time
// (per-call timeouts, a shared deadline, a shared deadline with admission, no
// timeout) and the edge service that applies one of them to a scenario's
// stages and their fallback ladders.
package pattern
