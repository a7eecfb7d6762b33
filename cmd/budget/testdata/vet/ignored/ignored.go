// Package ignored has findings silenced by //budget:ignore, for the budget
// vet CLI test: one with a reason, on the line above and at the end of the
// line, and one directive without a reason, which silences nothing.
package ignored

import (
	"context"
	"net/http"
	"time"
)

// Audit writes an entry that must outlive the request.
func Audit(ctx context.Context, write func(context.Context) error) error {
	//budget:ignore bgdeadline the entry is written even after the request ends
	c, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return write(c)
}

// Serve runs a server for a test harness on loopback.
func Serve(h http.Handler) error {
	return http.ListenAndServe("127.0.0.1:0", h) //budget:ignore httpserver loopback only, for a test harness
}

// Fetch has a directive without a reason: the finding stands.
func Fetch(ctx context.Context, write func(context.Context) error) error {
	//budget:ignore bgdeadline
	c, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return write(c)
}
