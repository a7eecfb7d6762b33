package wire

// The Budget-No-Retry response header is how a server tells its caller not to retry a
// failed request: retries happen at the hop nearest the failure, so that three hops
// that each make three attempts do not turn one failing request into 27 calls at the
// bottom. Its value is one token saying why.
//
// Trust. It is a response header: a client reads it on the answer of the server it
// called, and a server never reads it on a request (a client that sends it on a
// request changes nothing). It is therefore not one of the [Sources] a [Policy]
// trusts, and there is no trust bit for it: the worst a hostile or mistaken server can
// do with it is make its caller not retry, which it could equally do by failing every
// attempt. A proxy that forwards its upstream's answer forwards the header with it,
// which is what the rule wants: the retries below it were already made.

// HeaderBudgetNoRetry is the response header by which a server asks its caller not to
// retry. Its value is a [NoRetry] token, "shed" or "retried"; gRPC and Connect metadata
// and AMQP headers carry it as "budget-no-retry". Parse it with [ParseBudgetNoRetry];
// write it with [FormatBudgetNoRetry].
const HeaderBudgetNoRetry = "Budget-No-Retry"

// NoRetry is why a server asked its caller not to retry ([HeaderBudgetNoRetry]). The
// zero value is none.
type NoRetry uint8

// The reasons a server gives.
const (
	// NoRetryShed: the server refused the request on arrival, before any work: it was
	// overloaded, or the request's budget was spent or too short. Nothing ran.
	NoRetryShed NoRetry = iota + 1
	// NoRetryRetried: the server ran the request, and it failed after the server
	// had already retried its own dependency and given up, or a dependency told it not
	// to retry. The work may have run.
	NoRetryRetried
)

// maxNoRetry is the longest value ParseBudgetNoRetry reads before calling it malformed:
// the longest token, with room for optional whitespace a proxy may add.
const maxNoRetry = 16

var noRetryTokens = [...]string{NoRetryShed: "shed", NoRetryRetried: "retried"}

// String returns the header token of r ("shed" or "retried"), or "" for any other
// value.
func (r NoRetry) String() string {
	if r >= NoRetryShed && r <= NoRetryRetried {
		return noRetryTokens[r]
	}
	return ""
}

// FormatBudgetNoRetry returns the [HeaderBudgetNoRetry] value for r and true, or "" and
// false when r is not [NoRetryShed] or [NoRetryRetried], so that a server never writes a
// value its callers would refuse. It does not allocate.
func FormatBudgetNoRetry(r NoRetry) (string, bool) {
	s := r.String()
	return s, s != ""
}

// ParseBudgetNoRetry reads the [HeaderBudgetNoRetry] values of one response, as
// net/http's Header or gRPC metadata holds them. It returns 0 and false with a nil error
// when there is none; the reason and true when there is exactly one value, "shed" or
// "retried" (lowercase, spaces or tabs around it ignored); and otherwise a [*ParseError]
// matching [ErrMalformed] that quotes the value (its first 32 bytes) and says what was
// wrong: empty, longer than 16 bytes, an unknown token, or more than one value (several
// fields, or a comma-separated list as a proxy joins them).
//
// A caller deciding whether to retry should test whether the header is present, not
// whether it parses: a value from a newer server that this package does not know still
// asks for no retry. It does not allocate unless a value is malformed, and is safe for
// concurrent use.
func ParseBudgetNoRetry(vals []string) (NoRetry, bool, error) {
	switch {
	case len(vals) == 0:
		return 0, false, nil
	case len(vals) > 1:
		return 0, false, noRetryError(vals[0], "sent more than once")
	}
	v := vals[0]
	if len(v) > maxNoRetry {
		return 0, false, noRetryError(v, "longer than 16 bytes")
	}
	switch t := trimOWS(v); t {
	case "":
		return 0, false, noRetryError(v, "empty")
	case "shed":
		return NoRetryShed, true, nil
	case "retried":
		return NoRetryRetried, true, nil
	default:
		for i := 0; i < len(t); i++ {
			if t[i] == ',' {
				return 0, false, noRetryError(v, "more than one value")
			}
		}
	}
	return 0, false, noRetryError(v, `not "shed" or "retried"`)
}

func noRetryError(v, why string) *ParseError { return textParseError(HeaderBudgetNoRetry, v, why) }
