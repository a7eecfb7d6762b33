// Package edge holds the steps every transport adapter takes where a request
// crosses into or out of a process, written once so that the edges cannot
// drift apart: httpbudget, grpcbudget, connectbudget, amqpbudget and
// otelbudget all call it.
//
// On arrival ([Arrival.Arrive], with the [Request] an RPC adapter builds by
// [CallRequest]) a request's deadline sources are read through a
// [wire.Header], decided by the inbound [wire.Policy], skewed and malformed
// values and refusals are reported to the observer, the answer margin
// ([MarginKeeper]) is taken off, the probe mark and class are put on the
// handler's context, and the budget is started. On the way out ([Send]) the budget is
// read once ([budget.Read]), a call with less than the minimum useful time
// left is refused locally, and the values to send are computed; the class
// and probe mark go out beside them ([CriticalityValue], [ProbeValue], and
// [StampHTTP] for an HTTP header). What differs
// between carriers stays in the adapters: how headers are read from a message
// or metadata, and how a refusal is spelled (an HTTP status, a gRPC code, a
// rejected message).
//
// The options every adapter shares are declared here once, and every
// adapter's constructors take them: on the server [WithPolicy], [WithSwitch],
// [WithStage], [WithObserver], [WithLedgerCapacity], [WithAnswerMargin]; on
// the client [WithTransit], [WithMinUseful], [WithClientStage]; on both
// [WithAdmission]. A service passes them beside the adapter's own options:
//
//	httpbudget.NewHandler(mux, edge.WithPolicy(public), httpbudget.WithClassifier(byRoute))
//	grpcbudget.UnaryServerInterceptor(edge.WithPolicy(public), edge.WithStage("checkout"))
//
// Apart from those options, the package is for adapter authors, of this repository's modules and of
// others; services use the adapters. Its names are versioned with the root
// module, so an adapter in a module of its own depends on a public contract,
// never on internal packages. It imports
// only the standard library and this module's budget and wire packages. All
// functions are safe for concurrent use.
package edge
