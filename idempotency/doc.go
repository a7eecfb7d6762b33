// Package idempotency holds what a server needs to run a request at most
// once per idempotency key, whatever the protocol: the [Record] of a key's
// first request and its answer, the [Store] interface that keeps records,
// and [MemoryStore], a store in one process's memory (bounded in keys,
// bytes and time; its zero value is ready to use).
//
// The protocol middleware lives beside each protocol (httpbudget's
// Idempotent for net/http, grpcbudget's IdempotentUnaryServerInterceptor,
// connectbudget's NewIdempotentInterceptor) and shares [Once], the part that
// does not depend on the protocol: reserve the key, run the work or wait
// for the first request, replay its answer, forget the key when the work
// panics. It talks to any [Store]: a server with one
// replica can use a [MemoryStore]; replicas behind a balancer share a store
// such as pgxbudget's IdempotencyStore on PostgreSQL. Package
// idempotency/storetest holds the contract every store passes.
//
// A store's life cycle for one key:
//
//	rec, mine, err := store.Reserve(ctx, key, fp) // fp: a hash of the request
//	switch {
//	case err != nil: // fail closed: do not run the work
//	case mine:       // run the work, then
//		store.Complete(ctx, key, &idempotency.Record{Done: true, Replayable: true, Status: 200, Body: answer})
//	case rec.Fingerprint != fp: // the key was reused with another request: refuse it
//	case rec.Done:   // replay rec's answer
//	default:         // the first request still runs: wait (poll Get) or refuse
//	}
//
// The package depends only on the standard library and package budget.
package idempotency
