// Package httpbudget carries a request's budget across net/http.
//
// On the server, [NewHandler] reads the deadline a request arrived with, under
// an inbound [wire.Policy] (clamp, default, minimum, trusted sources, reserve),
// and either refuses the request on arrival — HTTP 504 with a Budget-Expired
// header naming the stage, the handler never runs — or runs the handler with
// the budget in its context, ledger and all.
//
// On the client, [Transport] sends the time left as Request-Timeout-Ms and
// Request-Deadline (and optionally Connect-Timeout-Ms and Envoy's upstream
// timeout), refuses locally, without a network call, when less than the
// minimum useful time is left, never retries, and reports an upstream's
// Budget-Expired answer as an error no layer retries. After a request of
// its ran out of time in flight, it lingers ([WithLinger]): a caller past its
// deadline returns at once, and the server's late answer is read in the
// background so that the connection is kept, rather than closed as net/http
// closes every abandoned HTTP/1.1 request's. [NewBaseTransport]
// builds an http.Transport whose connect, TLS and response-header phases are
// bounded by the request's budget as well as by fixed caps.
//
// Retries do not duplicate work. The Transport sends a call's idempotency key
// ([budget.WithIdempotencyKey]) as Idempotency-Key on every attempt, and
// tells in each error it returns whether the request may have run
// ([budget.SentOf]), so that a [budget.Retry] repeats only what is safe to
// repeat. On the server, [Idempotent] runs a handler at most once per key
// and answers repeats with the first answer, from an [idempotency.Store]
// ([idempotency.MemoryStore] in one process).
//
// The package depends only on the standard library and this module.
package httpbudget
