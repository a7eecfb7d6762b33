package budget

import (
	"context"
	"crypto/rand"
)

type idempotencyKey struct{}

// WithIdempotencyKey returns a copy of parent carrying an idempotency key: a
// random value (128 bits from crypto/rand, as 26 characters of base32) made
// once for one logical call, so that every attempt and every hedge of that
// call carries the same key. When parent already carries a key, it returns
// parent unchanged, so calling it again inside a retry loop keeps the key.
//
// Adapters send the key with every request (httpbudget's Transport as the
// Idempotency-Key header), and a server that honours keys (httpbudget's
// Idempotent) answers a repeated key with the first answer instead of
// running the work again. A [Retry] retries an attempt that may have run
// ([MaybeExecuted]) only for a call declared idempotent or carrying a key.
// Set a key only toward servers that honour it: a key makes such retries
// happen, and a server that ignores it runs them twice.
//
// Call it once per logical call, before the retry loop, never per attempt.
// It costs three allocations (the key, its context, the value) and about
// 0.25 µs (BenchmarkWithIdempotencyKey).
func WithIdempotencyKey(parent context.Context) context.Context {
	if _, ok := IdempotencyKeyFrom(parent); ok {
		return parent
	}
	return context.WithValue(parent, idempotencyKey{}, rand.Text())
}

// IdempotencyKeyFrom returns the idempotency key ctx carries and true, or ""
// and false when it carries none (see [WithIdempotencyKey]). It costs one
// context value lookup.
func IdempotencyKeyFrom(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(idempotencyKey{}).(string)
	return k, ok && k != ""
}
