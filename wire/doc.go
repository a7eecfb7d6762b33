// Package wire carries a request's deadline on the wire: it encodes the time left into
// outbound headers, parses every deadline header a server may receive, and decides, under
// an inbound [Policy], which deadline a request gets on arrival or whether it is refused.
//
// The package is a pure parsing layer. It imports only the standard library and the
// budget package's types (a request's class is a budget.Criticality; the budget package
// never imports wire), and never reads the clock: every function that needs the current
// time takes it as a parameter named now, so results are reproducible and testable. The
// HTTP and gRPC adapters build on it.
//
// # Outbound
//
// A sender writes both of this library's headers: [HeaderRequestTimeout] with the time
// left in whole milliseconds, rounded down, and [HeaderRequestDeadline] with the same
// deadline on the sender's wall clock. The relative value survives clocks that disagree;
// the absolute one lets the receiver charge transit time to the budget. The encoders never
// round up and never write "0": when less than one millisecond is left,
// [AppendRequestTimeout] reports false so that the caller refuses locally instead of
// sending a request nobody can serve. [AppendGRPCTimeout] writes grpc-timeout in the
// finest unit that fits its eight digits, also rounded down.
//
// # Inbound
//
// Each parser gives one of three outcomes. An empty value is absent (ok is false and the
// error is nil), because that is what [net/http.Header.Get] returns for a missing field. A
// value that follows the header's grammar is valid. Anything else is malformed: the error
// is a [*ParseError] naming the header and what was wrong, and it matches [ErrMalformed]
// with [errors.Is]. Parsers accept ASCII digits only (no sign, no space, no exponent, no
// other script's digits), cap the number of digits per header, clamp values that would
// overflow a [time.Duration], and never panic; each one is fuzzed.
//
// [Extract] reads every trusted source of a request (repeated fields and comma-separated
// values included) and lets the strictest value win. [Policy.Decide] adds the server's
// rules: a maximum, a default, a minimum below which requests are shed on arrival, a
// reserve kept back for writing the response, and strict or lenient treatment of malformed
// values. Max is a ceiling: with Max set, no request runs longer than Max, whatever it
// sent. [Policy.DecideSent] is the same rule for a request that waited in a queue after
// it was sent, such as a broker message: its wait is charged to its budget, and a sender
// whose clock runs ahead cannot add time to it. [Policy.Validate] reports configuration mistakes (a negative value, a Min that
// would shed everything) by field name. A [Switch] holds the policy of a running server
// so that an operator can loosen it or turn it off without a restart; it refuses an
// invalid policy and keeps the one it had.
//
// # Criticality
//
// Beside the deadline a request may carry its class, [HeaderRequestCriticality]:
// "critical", "default" or "sheddable", so that under a shortage the requests that matter
// are the ones still answered. It follows the deadline's trust rule: [Policy.Decide] reads
// it only when the policy trusts [SourceRequestCriticality] (the zero policy does; an edge
// trusting [SourcesNone] does not), takes the least critical of several values, counts a
// malformed one (or refuses it under Strict), and otherwise gives the request the
// policy's Criticality. [Decision.Criticality] is the result, as a small integer that
// converts to the budget package's Criticality.
//
// A probe, a call an upstream sends to find out whether a dependency recovered, carries
// [HeaderBudgetProbe] ("1") under the same rule: [Policy.Decide] reads it only when the
// policy trusts [SourceProbe] (the zero policy does; an edge trusting [SourcesNone] does
// not), and [Decision.Probe] reports it, so that the adapter starts the handler marked as
// a probe and the hop behind admits it as one.
//
// # Answers
//
// Two response headers tell a caller not to retry. [HeaderBudgetExpired] names the stage
// that found the budget spent. [HeaderBudgetNoRetry] says "shed" (refused on arrival:
// nothing ran) or "retried" (the server already retried its own dependency and gave up),
// so that retries happen at the hop nearest the failure; [ParseBudgetNoRetry] reads it.
// Neither is a [Sources] member: a client reads them from the server it called, and a
// hostile server could as well make it give up by failing.
//
// # Streams
//
// A stream may also carry the budget its client asks for each message,
// [HeaderRequestMessageTimeout] (gRPC metadata "request-message-timeout-ms"), parsed
// by [ParseRequestMessageTimeout]. It is not a deadline source: [Extract] and
// [Policy.Decide] do not read it; the stream adapters do, under the trust given to
// [SourceRequestTimeout].
//
// # Clocks
//
// Relative values (milliseconds left) need no shared clock; absolute values (a wall-clock
// instant) do. An absolute value is therefore used only when it is consistent with the
// relative ones, within a skew threshold: then the tighter value wins, which charges the
// request's transit time to its budget. An absolute value that would cut the budget by
// more than the threshold, or that arrives alone already further in the past than the
// threshold, is taken as evidence that the clocks disagree. It is reported (so it can be
// counted) and ignored, and the policy default applies; the request is not treated as
// expired, because a wrong clock is the likelier explanation than a transit that long.
// Deadlines returned by this package are expressed as now plus a duration, so they carry
// now's monotonic clock reading when now has one.
//
// # Cost
//
// The parsers, the Append encoders, [Extract] and [Policy.Decide] over an [HTTPHeader] or
// [Metadata] do not allocate on valid input; the Format encoders allocate the returned
// string. Errors allocate only when a malformed value must be described. All functions are
// safe for concurrent use; a [Policy] must not be modified while it is in use (store a new
// one in a [Switch] instead).
package wire
