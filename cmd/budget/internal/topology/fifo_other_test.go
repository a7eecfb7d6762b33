//go:build !unix

package topology_test

import "testing"

func fifoCase(*testing.T, string) []struct{ name, path, want string } { return nil }
