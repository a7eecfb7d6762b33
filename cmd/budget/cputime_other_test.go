//go:build !unix

package main

// cpuTime is not measured on this platform; the tests use the wall time.
func cpuTime() int64 { return 0 }
