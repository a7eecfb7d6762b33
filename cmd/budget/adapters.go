package main

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc"
)

// This file is the seam between the demo and the budget adapters for HTTP and
// gRPC. Until the httpbudget and grpcbudget packages are available it carries
// the least that the demo needs from them: the time left travels as
// Request-Timeout-Ms on HTTP (gRPC already carries grpc-timeout), and a
// dependency's server turns it back into its request's deadline.

// budgetTransport returns a RoundTripper that sends the time left before the
// request context's deadline as Request-Timeout-Ms.
func budgetTransport(base http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if dl, ok := req.Context().Deadline(); ok {
			left := time.Until(dl).Milliseconds()
			if left < 1 {
				return nil, context.DeadlineExceeded
			}
			req = req.Clone(req.Context())
			req.Header.Set("Request-Timeout-Ms", strconv.FormatInt(left, 10))
		}
		return base.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// budgetGRPCClientOptions returns the dial options that make a gRPC channel
// budget-aware.
func budgetGRPCClientOptions() []grpc.DialOption { return nil }

// serverHTTP wraps a dependency's HTTP handler with its inbound policy: the
// request's deadline is what the caller sent, and none when it sent nothing.
func serverHTTP(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		if v := r.Header.Get("Request-Timeout-Ms"); v != "" {
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms < 1 {
				http.Error(w, "bad Request-Timeout-Ms", http.StatusBadRequest)
				return
			}
			ctx, cancel := context.WithDeadline(r.Context(), arrived.Add(time.Duration(ms)*time.Millisecond))
			defer cancel()
			r = r.WithContext(ctx)
		}
		h.ServeHTTP(w, r)
	})
}

// serverGRPCOptions returns the options of a dependency's gRPC server.
func serverGRPCOptions() []grpc.ServerOption { return nil }
