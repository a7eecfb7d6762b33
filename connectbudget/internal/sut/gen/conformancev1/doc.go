// Package conformancev1 holds the messages of connectrpc.com/conformance's
// protocol, generated from its .proto files (see ../../gen.go).
package conformancev1
