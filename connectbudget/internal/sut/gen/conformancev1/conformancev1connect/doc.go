// Package conformancev1connect holds connect-go's client and handler of the
// conformance service, generated from its .proto files (see ../../../gen.go).
package conformancev1connect
