// Package load is the demo's load generator: it sends a number of requests
// to an edge, so many at a time, and records how each ended as the user saw
// it, cutting off at a safety limit any request that would otherwise run on
// for ever.
package load
