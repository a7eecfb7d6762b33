// Package loopback starts HTTP servers on 127.0.0.1 that wait, on close, for
// every handler to return, and builds the clients that call them: plain, or
// wrapped in the budget adapters for HTTP and gRPC.
package loopback
