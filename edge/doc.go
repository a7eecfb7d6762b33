// Package edge holds the steps every transport adapter takes where a request
// crosses into or out of a process, written once so that the edges cannot
// drift apart: httpbudget, grpcbudget and amqpbudget all call it.
//
// On arrival ([Arrival.Arrive]) a request's deadline sources are read through
// a [wire.Header], decided by the inbound [wire.Policy], skewed and malformed
// values and refusals are reported to the observer, the answer margin is
// taken off, and the budget is started. On the way out ([Send]) the budget is
// read once ([budget.Read]), a call with less than the minimum useful time
// left is refused locally, and the values to send are computed. What differs
// between carriers stays in the adapters: how headers are read from a message
// or metadata, and how a refusal is spelled (an HTTP status, a gRPC code, a
// rejected message).
//
// The package is for adapter authors; services use the adapters. It imports
// only the standard library and this module's budget and wire packages. All
// functions are safe for concurrent use.
package edge
