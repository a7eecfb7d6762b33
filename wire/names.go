package wire

// Header names. Each constant is spelled the way the header's originator writes it.
// net/http canonicalizes names on Set and Get and gRPC metadata lowercases them, so the
// spelling matters only to people reading traffic and to carriers that compare names
// byte for byte.
const (
	// HeaderRequestTimeout is this library's relative header: the time left when the
	// request was sent, in whole milliseconds rounded down, as 1 to 10 ASCII digits.
	// Senders never write "0"; a receiver that gets "0" treats the request as expired.
	HeaderRequestTimeout = "Request-Timeout-Ms"

	// HeaderRequestDeadline is this library's absolute header: the same deadline on the
	// sender's wall clock, in Unix milliseconds, as 1 to 15 ASCII digits.
	HeaderRequestDeadline = "Request-Deadline"

	// HeaderXRequestDeadline is an absolute deadline in Unix milliseconds or, as userver
	// sends it, Unix microseconds. The two are told apart by digit count: up to 15
	// digits is milliseconds and 16 to 19 digits is microseconds. The rule is safe in
	// both directions: Unix milliseconds reach 16 digits only in the year 318857, and
	// Unix microseconds have had 16 digits since September 2001.
	HeaderXRequestDeadline = "X-Request-Deadline"

	// HeaderGRPCTimeout is gRPC's relative timeout: 1 to 8 ASCII digits followed by
	// one unit letter, H (hours), M (minutes), S (seconds), m (milliseconds),
	// u (microseconds) or n (nanoseconds), as the gRPC over HTTP/2 specification defines.
	HeaderGRPCTimeout = "grpc-timeout"

	// HeaderConnectTimeout is the Connect protocol's relative timeout: whole
	// milliseconds as 1 to 10 ASCII digits.
	HeaderConnectTimeout = "Connect-Timeout-Ms"

	// HeaderEnvoyExpectedTimeout is set by Envoy on the requests it forwards: the time
	// in milliseconds the proxy expects the request to complete in. It has no length
	// limit of its own; this package accepts 1 to 15 digits.
	HeaderEnvoyExpectedTimeout = "X-Envoy-Expected-Rq-Timeout-Ms"

	// HeaderEnvoyUpstreamTimeout asks an Envoy in front of the callee to time the
	// request out after this many milliseconds. It is outbound only: it is an
	// instruction to the proxy, not a statement of time left, and Envoy reads "0" as
	// "no timeout", which is why its encoder never writes 0.
	HeaderEnvoyUpstreamTimeout = "x-envoy-upstream-rq-timeout-ms"

	// HeaderContextTTL is YARPC's relative header: the time to live in milliseconds.
	// This package accepts 1 to 15 digits.
	HeaderContextTTL = "Context-TTL-MS"

	// HeaderL5DDeadline is the deadline linkerd 1 propagates, in Finagle's form: two
	// decimal numbers of Unix nanoseconds separated by one space, the instant the
	// deadline was set and the deadline itself ("1700000000000000000 1700000002000000000").
	HeaderL5DDeadline = "l5d-ctx-deadline"

	// HeaderFinagleDeadline is the deadline Finagle's HTTP stack propagates, in the same
	// form as [HeaderL5DDeadline].
	HeaderFinagleDeadline = "Finagle-Ctx-com.twitter.finagle.Deadline"

	// HeaderBudgetExpired is a response header naming the stage that refused a request
	// because its budget was spent. A client never retries such a response: the budget
	// is gone, not the server.
	HeaderBudgetExpired = "Budget-Expired"
	// HeaderRequestAttempt carries the number of the attempt within the caller's
	// retry loop, 1 for the first, as 1 to 3 ASCII digits. It lets a server see
	// a retry storm building up. Parse it with [ParseRequestAttempt].
	HeaderRequestAttempt = "Request-Attempt"
)

// fieldKind says how a source's values are written.
type fieldKind uint8

const (
	kindMillis           fieldKind = iota // relative: whole milliseconds
	kindGRPC                              // relative: grpc-timeout digits and unit
	kindUnixMillis                        // absolute: Unix milliseconds
	kindUnixMilliOrMicro                  // absolute: Unix milliseconds or microseconds by digit count
	kindNanoPair                          // absolute: Finagle's "timestamp-ns deadline-ns"
)

// absolute reports whether values of this kind are wall-clock instants.
func (k fieldKind) absolute() bool { return k >= kindUnixMillis }

// field describes one inbound source.
type field struct {
	src       Sources
	name      string // the exported constant's spelling, used in errors
	lower     string // the key gRPC metadata and HTTP/2 use
	canonical string // the key net/http uses, textproto.CanonicalMIMEHeaderKey(name)
	kind      fieldKind
	digits    int // most digits accepted, per number
}

// fields lists the inbound sources in the order Extract reads them. Every relative
// source comes first, so that each absolute value can be checked against the strictest
// relative one; ties go to the earlier entry, which puts this library's own headers
// first. The table is never modified.
var fields = [...]field{
	{SourceRequestTimeout, HeaderRequestTimeout, "request-timeout-ms", "Request-Timeout-Ms", kindMillis, 10},
	{SourceGRPCTimeout, HeaderGRPCTimeout, "grpc-timeout", "Grpc-Timeout", kindGRPC, 8},
	{SourceConnectTimeout, HeaderConnectTimeout, "connect-timeout-ms", "Connect-Timeout-Ms", kindMillis, 10},
	{SourceEnvoyExpectedTimeout, HeaderEnvoyExpectedTimeout, "x-envoy-expected-rq-timeout-ms", "X-Envoy-Expected-Rq-Timeout-Ms", kindMillis, 15},
	{SourceContextTTL, HeaderContextTTL, "context-ttl-ms", "Context-Ttl-Ms", kindMillis, 15},
	{SourceRequestDeadline, HeaderRequestDeadline, "request-deadline", "Request-Deadline", kindUnixMillis, 15},
	{SourceXRequestDeadline, HeaderXRequestDeadline, "x-request-deadline", "X-Request-Deadline", kindUnixMilliOrMicro, 19},
	{SourceL5DDeadline, HeaderL5DDeadline, "l5d-ctx-deadline", "L5d-Ctx-Deadline", kindNanoPair, 19},
	{SourceFinagleDeadline, HeaderFinagleDeadline, "finagle-ctx-com.twitter.finagle.deadline", "Finagle-Ctx-Com.twitter.finagle.deadline", kindNanoPair, 19},
}
