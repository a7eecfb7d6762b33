package wire

import (
	"net/http"
	"net/textproto"
)

// Header is read-only access to the header fields of one request. [HTTPHeader] and
// [Metadata] adapt the two common carriers without allocating; other carriers (a
// message broker's headers, a custom framework) implement it directly.
//
// Values returns every value of the named field, in the order received, or nil when the
// field is absent. This package always asks with the lowercase name, the form gRPC
// metadata and HTTP/2 use; an implementation over case-sensitive keys must find the
// field in its own spelling. The caller does not modify or retain the returned slice.
//
// An interface was preferred to a function type so that the two adapters can be plain
// conversions of the caller's map, which cost nothing, and so that [Extract] can
// recognize them and look up their precomputed keys directly.
type Header interface {
	Values(name string) []string
}

// HTTPHeader adapts a [net/http.Header], whose keys are in canonical form
// ("Request-Timeout-Ms", "Grpc-Timeout"). Convert with HTTPHeader(r.Header); the
// conversion does not copy or allocate. Lookups of the headers this package reads use
// precomputed canonical keys; other names are canonicalized as
// [net/http.Header.Values] does, which may allocate.
type HTTPHeader http.Header

// Values returns the values of the named field. It is safe for concurrent use as long as
// nobody writes to the header.
func (h HTTPHeader) Values(name string) []string {
	for i := range fields {
		if fields[i].lower == name || fields[i].canonical == name {
			return h[fields[i].canonical]
		}
	}
	if name == requestAttemptLower || name == HeaderRequestAttempt {
		return h[HeaderRequestAttempt] // canonical already; read on every arrival
	}
	if name == criticalityField.lower || name == HeaderRequestCriticality {
		return h[HeaderRequestCriticality]
	}
	if name == probeField.lower || name == HeaderBudgetProbe {
		return h[HeaderBudgetProbe]
	}
	return textproto.MIMEHeader(h).Values(name)
}

// Metadata adapts gRPC-style metadata, a map from lowercase keys to values, such as
// google.golang.org/grpc/metadata.MD. Convert with Metadata(md); the conversion does not
// copy or allocate. Note that grpc-go consumes grpc-timeout itself and exposes it only as
// the server context's deadline, not in the incoming metadata; a gRPC server adapter has
// to carry that deadline over (for example as a grpc-timeout entry) if it should count.
type Metadata map[string][]string

// Values returns the values stored under name, which must be lowercase as gRPC requires.
// It is safe for concurrent use as long as nobody writes to the map.
func (m Metadata) Values(name string) []string { return m[name] }

// requestAttemptLower is [HeaderRequestAttempt] as gRPC metadata spells it.
const requestAttemptLower = "request-attempt"
